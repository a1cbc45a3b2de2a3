//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// timeToPeerBound is what the Liqo test allows from the merge of a spec
// change to the consumer's Liqo reaching the provider's API server with
// the new Identity (issue 32's target), both daemons started with default
// flags and Flux as manifests/flux ships it. The handshake takes three
// hand-offs between the daemons and one apply by each cluster's Flux; the
// bound holds on a loaded 2-core machine only if no step waits for an
// interval (a daemon's --interval, Flux's intervals, a dependency's
// requeue).
const timeToPeerBound = 30 * time.Second

// loadAverage is the machine's 1-minute load average ("?" where
// /proc/loadavg is missing): the figures of a shared machine need it.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// logLine is one line of a JSON log (a gitpeer daemon's, a Flux
// controller's: fluxcd/pkg/runtime/logger), with its time.
type logLine struct {
	ts     time.Time
	msg    string
	fields map[string]any
}

// str is a string field of the line ("" when missing or not a string).
func (l logLine) str(key string) string {
	s, _ := l.fields[key].(string)
	return s
}

// readJSONLog reads the lines of the JSON log at path at or after since;
// lines that are not JSON objects with an RFC 3339 "ts" are skipped.
func readJSONLog(path string, since time.Time) ([]logLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		ts, _ := m["ts"].(string)
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || at.Before(since) {
			continue
		}
		msg, _ := m["msg"].(string)
		lines = append(lines, logLine{ts: at, msg: msg, fields: m})
	}
	return lines, sc.Err()
}

// peeringProgress is what the time-to-peer check sees of the consumer's
// Liqo in one read: the new Identity, Liqo's verdict on the provider's API
// server with it, and the granted slice's VirtualNode.
type peeringProgress struct {
	identity, established, virtualNode bool
}

// readPeeringProgress reads the ForeignCluster of provider, the Identities
// for it and the VirtualNodes in ns on c, in one kubectl call (the check
// polls it often: one process per read keeps its own load small).
func readPeeringProgress(ctx context.Context, c *cluster, provider, ns, slice string) (peeringProgress, error) {
	out, err := s.kube(ctx, c, nil, "get", "foreignclusters.core.liqo.io,identities.authentication.liqo.io,virtualnodes.offloading.liqo.io",
		"-n", ns, "-o", "json")
	if err != nil {
		return peeringProgress{}, err
	}
	type condition struct{ Type, Status string }
	var list struct {
		Items []struct {
			Kind     string
			Metadata struct {
				Name   string
				Labels map[string]string
			}
			Status struct {
				Conditions []condition
				Modules    struct {
					Authentication struct{ Conditions []condition }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return peeringProgress{}, fmt.Errorf("kubectl get: %v", err)
	}
	has := func(cs []condition, typ, status string) bool {
		for _, c := range cs {
			if c.Type == typ && c.Status == status {
				return true
			}
		}
		return false
	}
	var p peeringProgress
	for _, it := range list.Items {
		switch {
		case it.Kind == "Identity" && it.Metadata.Labels["liqo.io/remote-cluster-id"] == provider:
			p.identity = true
		case it.Kind == "ForeignCluster" && it.Metadata.Name == provider:
			// APIServerStatus stays Established through a revocation: Liqo's
			// verdict on the control-plane Identity says it is the new one.
			p.established = has(it.Status.Conditions, "APIServerStatus", "Established") &&
				has(it.Status.Modules.Authentication.Conditions, "AuthIdentityControlPlaneStatus", "Ready")
		case it.Kind == "VirtualNode" && it.Metadata.Name == slice:
			p.virtualNode = true
		}
	}
	p.established = p.established && p.identity
	return p, nil
}

// timelineEvent is one hand-off of the handshake, at a time after the
// merge.
type timelineEvent struct {
	at   time.Duration
	what string
}

// daemonTimeline lists what the daemon of cluster id (its log at path,
// at debug level) did after merged: its start, the passes that changed
// nothing until its first push, each poll that saw refs move, each push
// with its steps, and the event that says the peering is Ready on the
// consumer side (readyAt, zero if none).
func daemonTimeline(path, id string, merged time.Time) (events []timelineEvent, readyAt time.Duration, err error) {
	lines, err := readJSONLog(path, merged.Add(-time.Minute))
	if err != nil {
		return nil, 0, err
	}
	pushed := false
	for _, l := range lines {
		at := l.ts.Sub(merged)
		switch {
		case l.msg == "starting":
			events = append(events, timelineEvent{at, id + "'s daemon starts"})
		case l.msg == "up to date" && !pushed:
			events = append(events, timelineEvent{at, fmt.Sprintf("%s's pass changed nothing (pass %s)", id, l.str("duration"))})
		case l.ts.Before(merged):
		case l.msg == "refs moved":
			refs, _ := json.Marshal(l.fields["refs"])
			events = append(events, timelineEvent{at, fmt.Sprintf("%s's poll: %s moved", id, refs)})
		case l.msg == "pushed":
			pushed = true
			steps, _ := json.Marshal(l.fields["steps"])
			events = append(events, timelineEvent{at, fmt.Sprintf("%s pushed %s (pass %s)", id, steps, l.str("duration"))})
		case l.msg == "event" && strings.Contains(l.str("message"), "(consumer, Ready)") && readyAt == 0:
			readyAt = at
			events = append(events, timelineEvent{at, id + ": Ready in Git (" + l.str("reason") + ")"})
		}
	}
	return events, readyAt, nil
}

// fluxTimeline lists what cluster id's kustomize-controller (its log at
// path) did with Kustomization gitpeer-<id> after merged: each apply, and
// each time it waited for a dependency (the waits a seal must never see).
func fluxTimeline(path, id string, merged time.Time) (events []timelineEvent, dependencyWaits int, err error) {
	lines, err := readJSONLog(path, merged)
	if err != nil {
		return nil, 0, err
	}
	for _, l := range lines {
		ks, _ := l.fields["Kustomization"].(map[string]any)
		name, _ := ks["name"].(string)
		at := l.ts.Sub(merged)
		switch {
		case name != "gitpeer-"+id:
		case l.msg == "server-side apply completed":
			events = append(events, timelineEvent{at, id + "'s Flux applied gitpeer-" + id})
		case strings.HasPrefix(l.msg, "Dependencies do not meet ready condition"):
			dependencyWaits++
			events = append(events, timelineEvent{at, id + "'s Flux: gitpeer-" + id + " waits for its dependency"})
		}
	}
	return events, dependencyWaits, nil
}
