package a2ui_test

import (
	"encoding/json"
	"fmt"

	"github.com/supervaize/supervaizer-go/a2ui"
)

func ExampleNewForm() {
	form := a2ui.NewForm("hello.start", "Say hello", "job.start", a2ui.StringField("name", "Name", a2ui.Required()))
	fmt.Println(form.Validate())
	b, _ := json.Marshal(form)
	fmt.Println(string(b))
	// Output:
	// <nil>
	// {"type":"Form","id":"hello.start","title":"Say hello","fields":[{"id":"name","label":"Name","type":"string","required":true}],"submit":{"action":"job.start"}}
}
