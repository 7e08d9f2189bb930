package a2ui_test

import (
	"encoding/json"
	"testing"

	"github.com/supervaize/supervaizer-go/a2ui"
)

func BenchmarkValidateValues(b *testing.B) {
	fields := researchPlan().Steps[0].Fields
	fields = append(fields, a2ui.StringField("code", "Code", a2ui.Pattern(`^[A-Z]{3}-\d+$`)))
	values := decodeValues(b, `{"goal": "Map the EU battery market", "mode": "custom", "budget": 10, "code": "ABC-12",
		"sources": [{"url": "https://a.example", "weight": 2}, {"url": "https://b.example"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if errs := a2ui.ValidateValues(fields, values); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkFormValidate(b *testing.B) {
	form := jobStartForm()
	b.ReportAllocs()
	for b.Loop() {
		if err := form.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFormMarshal(b *testing.B) {
	form := jobStartForm()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(form); err != nil {
			b.Fatal(err)
		}
	}
}
