package peerstatus

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// WriteTable writes peerings as `gitpeer status` prints them: one row per
// peering (consumer, provider, step, ready, its slices' states, the
// row's message: for a peering not Ready, who must act next and what),
// then, under it, one row per slice not Accepted that
// carries a reason, with that reason and message, and one per side that
// reports files in its inbox that are not artifacts (Peering.Unexpected).
func WriteTable(w io.Writer, peerings []Peering) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONSUMER\tPROVIDER\tSTEP\tREADY\tSLICES\tMESSAGE")
	for _, p := range peerings {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\n", p.Consumer, p.Provider, p.Step, p.Ready, p.SliceSummary(), oneLine(p.line()))
		for _, s := range p.Slices {
			if reason := sliceReason(s); reason != "" {
				fmt.Fprintf(tw, "\t\t\t\t  %s:%s\t%s\n", s.Name, sliceState(s), oneLine(reason))
			}
		}
		for _, c := range p.Unexpected() {
			fmt.Fprintf(tw, "\t\t\t\t  %s:%s\t%s\n", c.Cluster, c.Reason, oneLine(c.Message))
		}
	}
	return tw.Flush()
}

// line is the row's message: Message, or for a Peering that Read did not
// make, the Summary.
func (p Peering) line() string {
	if p.Message != "" {
		return p.Message
	}
	return p.Summary()
}

// sliceReason is "Reason: message" for a slice that is not Accepted, ""
// for one that is or that says nothing.
func sliceReason(s layout.SliceStatus) string {
	if sliceState(s) == "Accepted" || s.Reason == "" && s.Message == "" {
		return ""
	}
	if s.Reason == "" {
		return s.Message
	}
	if s.Message == "" {
		return s.Reason
	}
	return s.Reason + ": " + s.Message
}

// oneLine keeps a message on its row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Colours of the graph, GitHub's (Primer) success, attention, danger and
// muted, each a stroke and a light fill with dark text, legible on a light
// and on a dark page.
var colours = map[State]struct{ stroke, fill string }{
	StateReady:       {"#1a7f37", "#dafbe1"},
	StateReconciling: {"#9a6700", "#fff8c5"},
	StateStalled:     {"#cf222e", "#ffebe9"},
	"":               {"#6e7781", "#f6f8fa"},
}

// classOf is the Mermaid class of a cluster: its state, "idle" without
// peerings, "unpublished" before its cluster.yaml is in the repo.
func classOf(c Cluster) string {
	switch {
	case !c.Published:
		return "unpublished"
	case c.State == "":
		return "idle"
	}
	return strings.ToLower(string(c.State))
}

// WriteMermaid writes a Mermaid flowchart of the repo: a node per cluster,
// coloured by the worst state of its peerings (grey and dashed before it
// has published its cluster.yaml), and an arrow per peering from consumer
// to provider, labelled with its step and its denied slices and coloured
// by its state. GitHub and GitLab render it in a ```mermaid block.
func WriteMermaid(w io.Writer, clusters []Cluster, peerings []Peering) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	// Cluster IDs may be Mermaid keywords ("end", "graph"): nodes are named
	// c<index> and labelled with the ID.
	node := map[string]string{}
	for i, c := range clusters {
		node[c.ID] = fmt.Sprintf("c%d", i)
		label := c.ID
		if !c.Published {
			label += " (not published)"
		}
		fmt.Fprintf(&b, "    %s[%s]:::%s\n", node[c.ID], quote(label), classOf(c))
	}
	var links []string
	for _, p := range peerings {
		from, to := node[p.Consumer], node[p.Provider]
		if from == "" || to == "" {
			continue
		}
		label := string(p.Step)
		if p.State == StateStalled {
			label += ", stalled"
		}
		if p.WithdrawnAfter != nil {
			label += ", withdrawn after " + p.WithdrawnAfter.UTC().Format(time.RFC3339)
		}
		if denied := p.DeniedSlices(); len(denied) > 0 {
			names := make([]string, len(denied))
			for i, s := range denied {
				names[i] = s.Name
			}
			label += "; denied: " + strings.Join(names, ", ")
		}
		fmt.Fprintf(&b, "    %s -->|%s| %s\n", from, quote(label), to)
		links = append(links, colours[p.State].stroke)
	}
	for i, colour := range links {
		fmt.Fprintf(&b, "    linkStyle %d stroke:%s,stroke-width:2px\n", i, colour)
	}
	for _, class := range []struct {
		name  string
		state State
		extra string
	}{
		{"ready", StateReady, ""},
		{"reconciling", StateReconciling, ""},
		{"stalled", StateStalled, ""},
		{"idle", "", ""},
		{"unpublished", "", ",stroke-dasharray:4 3"},
	} {
		c := colours[class.state]
		fmt.Fprintf(&b, "    classDef %s fill:%s,stroke:%s,stroke-width:2px,color:#1f2328%s\n", class.name, c.fill, c.stroke, class.extra)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// quote makes s a Mermaid string: in double quotes, with a double quote
// as its entity code.
func quote(s string) string {
	return `"` + strings.ReplaceAll(oneLine(s), `"`, "#quot;") + `"`
}

// WritePage writes a Markdown page for a repo's STATUS.md: the graph of
// WriteMermaid, then a table of the peerings with each slice's state and,
// for those not Accepted, the reason. It holds nothing that changes
// without the status changing (no time, no commit), so a job rewriting it
// after every push commits only real changes.
func WritePage(w io.Writer, specFile string, clusters []Cluster, peerings []Peering) error {
	var b strings.Builder
	b.WriteString("# Peering status\n\n")
	fmt.Fprintf(&b, "<!-- Written by `gitpeer status --write` from %s and each cluster's signed status.yaml: do not edit. -->\n\n", specFile)
	ready := 0
	for _, p := range peerings {
		if p.Ready {
			ready++
		}
	}
	fmt.Fprintf(&b, "%d of %d peerings Ready.\n\n", ready, len(peerings))
	b.WriteString("```mermaid\n")
	if err := WriteMermaid(&b, clusters, peerings); err != nil {
		return err
	}
	b.WriteString("```\n\n")
	if len(peerings) > 0 {
		b.WriteString("| Consumer | Provider | State | Step | Slices | Message |\n")
		b.WriteString("|---|---|---|---|---|---|\n")
		for _, p := range peerings {
			var slices []string
			for _, s := range p.Slices {
				text := s.Name + ": " + sliceState(s)
				if reason := sliceReason(s); reason != "" {
					text += " (" + reason + ")"
				}
				slices = append(slices, text)
			}
			messages := []string{p.line()}
			for _, c := range p.Unexpected() {
				messages = append(messages, c.Cluster+": "+c.Reason+": "+c.Message)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(p.Consumer), cell(p.Provider), cell(string(p.State)),
				cell(string(p.Step)), strings.Join(mapCells(slices), "<br>"), strings.Join(mapCells(messages), "<br>"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mapCells(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = cell(s)
	}
	return out
}

// cell makes s safe in a Markdown table cell: one line, pipes and HTML
// escaped.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(oneLine(s))
}
