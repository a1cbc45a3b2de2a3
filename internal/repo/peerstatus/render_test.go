package peerstatus_test

import (
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/repo/peerstatus"
)

func TestRenderingsKeepWhatTheyQuoteInert(t *testing.T) {
	clusters := []peerstatus.Cluster{{ID: "end", Published: true, State: peerstatus.StateStalled}, {ID: "graph", Published: true}}
	peerings := []peerstatus.Peering{{Consumer: "end", Provider: "graph", Step: layout.StepTenantSent, State: peerstatus.StateStalled,
		Slices: []layout.SliceStatus{{Name: "s", Authentication: "Accepted", Resources: "Denied", Reason: "R", Message: `a "b" | <c>` + "\nd"}}}}

	var m strings.Builder
	if err := peerstatus.WriteMermaid(&m, clusters, peerings); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`c0["end"]:::stalled`, `c1["graph"]:::idle`, `c0 -->|"TenantSent, stalled; denied: s"| c1`, "linkStyle 0 stroke:#cf222e"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m.String())
		}
	}

	var page strings.Builder
	if err := peerstatus.WritePage(&page, "peering.cue", clusters, peerings); err != nil {
		t.Fatal(err)
	}
	if want := `| end | graph | Stalled | TenantSent | s: Denied (R: a "b" \| &lt;c&gt; d) |  |`; !strings.Contains(page.String(), want) {
		t.Errorf("page lacks %q:\n%s", want, page.String())
	}

	var table strings.Builder
	if err := peerstatus.WriteTable(&table, peerings); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(table.String()), "\n"); len(lines) != 3 || !strings.HasSuffix(lines[2], `s:Denied  R: a "b" | <c> d`) {
		t.Errorf("table:\n%s", table.String())
	}
}
