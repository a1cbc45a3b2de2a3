package reconcile

import (
	"bytes"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// isolate runs the secret guard over every file of the pass, before it is
// signed, and confines a refusal to the peering it came from: a hostile
// peer cannot make the guard refuse this cluster's whole commit and so stall
// its other peerings. Status messages that would carry such content are
// withheld.
func (p *pass) isolate(status *layout.ClusterStatus) error {
	bad := map[string]string{}
	for f, data := range p.out.Files {
		if old, err := fs.ReadFile(p.raw, f); err == nil && bytes.Equal(old, data) {
			continue // committed before, so checked before
		}
		if reason, found := p.in.Cache.Guard().Inspect(data); found {
			if peer := p.peerOf(f); peer != "" {
				bad[peer] = fmt.Sprintf("%s: %s", f, reason)
			}
		}
	}
	peers := make([]string, 0, len(bad))
	for peer := range bad {
		peers = append(peers, peer)
	}
	sort.Strings(peers)
	for _, peer := range peers {
		dirs := []string{layout.PeerDir(p.self, peer), layout.ClusterPath(peer, layout.InboxDir, p.self)}
		for f := range p.out.Files {
			for _, d := range dirs {
				if strings.HasPrefix(f, d+"/") {
					delete(p.out.Files, f)
				}
			}
		}
		if err := p.carry(dirs...); err != nil {
			return err
		}
		for f, data := range p.out.Files {
			if _, found := p.in.Cache.Guard().Inspect(data); found && p.peerOf(f) == peer {
				delete(p.out.Files, f) // even the earlier state is refused: drop it
			}
		}
		for i := range status.Peerings {
			ps := &status.Peerings[i]
			if ps.Consumer == peer || ps.Provider == peer {
				st := &peeringObject{status: ps}
				stall(st, ps.Step, reasons.PeerContentRefused, "refused to write content from %s that looks like private material (%s); kept what was accepted before", peer, bad[peer])
			}
		}
	}
	for i := range status.Peerings {
		ps := &status.Peerings[i]
		for j := range ps.Conditions {
			p.withhold(&ps.Conditions[j].Message)
		}
		for j := range ps.Slices {
			p.withhold(&ps.Slices[j].Message)
		}
	}
	return nil
}

// withhold replaces a status message that quotes what the guard would
// refuse to commit.
func (p *pass) withhold(msg *string) {
	if reason, found := p.in.Cache.Guard().Inspect([]byte(*msg)); found {
		*msg = "message withheld: it quoted content that looks like private material (" + reason + ")"
	}
}

// peerOf is the peer a file written by this cluster belongs to: the cluster
// whose inbox it is in, or the peer directory of the rendered objects.
func (p *pass) peerOf(f string) string {
	to, from, rest, ok := layout.Split(f)
	switch {
	case !ok:
		return ""
	case from == p.self:
		return to
	case to == p.self && strings.HasPrefix(rest, layout.LiqoDir+"/"):
		peer := peerOfRendered(rest)
		if peer == render.SharedDir {
			return ""
		}
		return peer
	}
	return ""
}
