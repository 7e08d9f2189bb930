package campaignctl

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/campaign"
	"github.com/supervaize/supervaizer-go/errcode"
)

func TestParseConstraints(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    campaign.Policy
		present bool
		invalid bool
	}{
		{name: "absent", raw: ``},
		{name: "null", raw: `null`},
		{name: "empty object: every constraint", raw: `{}`, want: campaign.Strict(), present: true},
		{name: "a member left out is true", raw: `{"no_merge":false,"no_force_push":false,"no_credential_changes":false,"no_destructive_git":false}`,
			want: campaign.Policy{RemoteOnly: true, NoPublication: true}, present: true},
		{name: "not a boolean", raw: `{"remote_only":"yes"}`, invalid: true},
		{name: "not an object", raw: `[true]`, invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, present, err := parseConstraints([]byte(tt.raw))
			if tt.invalid {
				require.NotNil(t, err)
				assert.Equal(t, errcode.InvalidParams, err.Code)
				return
			}
			require.Nil(t, err)
			assert.Equal(t, tt.present, present)
			if present {
				assert.Equal(t, tt.want, got)
			}
		})
	}
	assert.Equal(t, "no_publication, no_merge", beyond(campaign.Policy{RemoteOnly: true, NoPublication: true, NoMerge: true}, campaign.Policy{RemoteOnly: true}))
	assert.Empty(t, beyond(campaign.Policy{RemoteOnly: true}, campaign.Strict()))
}

// FuzzDecode: any params of any campaign/* method decode to checked params
// or an invalid-params refusal, and any argus_supervisor metadata likewise.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"campaign_id":"c","controller_id":"s","ttl_seconds":60,"request_id":"r"}`,
		`{"campaign_id":"c","controller_id":"s","controller_epoch":2,"request_id":"r","params":{"a":1},"constraints":{"no_merge":false}}`,
		`{"campaign_id":"","request_id":"\u0007"}`, `{"ttl_seconds":1e99}`, `[]`, `null`, ``,
	} {
		f.Add(uint8(0), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, m uint8, raw []byte) {
		cm := &Methods[int(m)%len(Methods)]
		p, err := Decode(raw, cm)
		if err != nil {
			require.Equal(t, errcode.InvalidParams, err.Code)
		} else {
			require.NotEmpty(t, p.CampaignID)
			require.LessOrEqual(t, len(p.CampaignID), maxCampaignID)
			if cm.mutation {
				require.NotNil(t, p.ControllerEpoch)
				require.GreaterOrEqual(t, *p.ControllerEpoch, int64(0))
			}
			if cm.ttl {
				require.NotNil(t, p.TTLSeconds)
				require.Positive(t, *p.TTLSeconds)
			}
		}
		sm, err := ParseSupervisor(raw, "r", "")
		if err != nil {
			require.Equal(t, errcode.InvalidParams, err.Code)
			return
		}
		require.Equal(t, "r", sm.RequestID)
		require.NotNil(t, sm.ControllerEpoch)
	})
}

// TestLeaseEndCoversTheTTL: a lease lasts at least its ttl_seconds, at most
// one second more, whatever the fraction of the second it is granted in
// (expires_at is a whole Unix second, and the lease expires when the clock
// reaches it).
func TestLeaseEndCoversTheTTL(t *testing.T) {
	for _, ttl := range []int64{1, 2, 60, maxLeaseTTL} {
		for range 20 {
			before := time.Now()
			end := time.Unix(leaseEnd(ttl), 0)
			after := time.Now()
			require.GreaterOrEqual(t, end.Sub(before), time.Duration(ttl)*time.Second, "ttl %d", ttl)
			require.LessOrEqual(t, end.Sub(after), time.Duration(ttl+1)*time.Second, "ttl %d", ttl)
			time.Sleep(13 * time.Millisecond) // another fraction of the second
		}
	}
}
