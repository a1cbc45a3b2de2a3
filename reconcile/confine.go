package reconcile

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/gitpeer/gitpeer/layout"
)

// ReasonPeeringFailed: this cluster's part of the pass for one peering
// failed (a signer that refused a peer's CSR, say, or anything else the
// peering's inputs led to). What was signed for that peer before is kept as
// it was; the other peerings went on. The message says what failed.
const ReasonPeeringFailed = "PeeringFailed"

// confine runs step, one peering's part of the pass with peer, so that its
// failure stays with that peering: the files step wrote for peer (its
// rendered objects and this cluster's folder in peer's inbox) are put back
// as they were before step, what this cluster signed there earlier is
// carried, step's Identities and Certificates are dropped, and st is
// Stalled PeeringFailed. Only a cancelled or expired ctx, which ends the
// whole pass, is returned: also before step, so that a pass of a thousand
// peerings stops at the next one once SIGTERM ends ctx.
func (p *pass) confine(ctx context.Context, peer string, st *peeringObject, step func() error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("peering with %s: %w", peer, err)
	}
	dirs := []string{layout.PeerDir(p.self, peer) + "/", layout.ClusterPath(peer, layout.InboxDir, p.self) + "/"}
	ours := func(f string) bool { return strings.HasPrefix(f, dirs[0]) || strings.HasPrefix(f, dirs[1]) }
	before := map[string][]byte{}
	for f, data := range p.out.Files {
		if ours(f) {
			before[f] = data
		}
	}
	identities, certificates, slices := len(p.out.Identities), len(p.out.Certificates), len(st.status.Slices)
	err := step()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return err // the pass is cancelled: it ends here for every peering
	}
	for f, data := range p.out.Files {
		if old, ok := before[f]; ours(f) && (!ok || !bytes.Equal(old, data)) {
			delete(p.out.Files, f)
		}
	}
	maps.Copy(p.out.Files, before)
	p.out.Identities, p.out.Certificates = p.out.Identities[:identities], p.out.Certificates[:certificates]
	st.status.Slices = st.status.Slices[:slices]
	kept := map[string][]byte{}
	maps.Copy(kept, p.out.Files)
	if cerr := p.carry(strings.TrimSuffix(dirs[0], "/"), strings.TrimSuffix(dirs[1], "/")); cerr != nil {
		return fmt.Errorf("%v; and keeping what was signed for %s: %w", err, peer, cerr)
	}
	// What this pass wrote before step, for the other role of a two-way
	// peering, wins over the earlier state carry brought back.
	maps.Copy(p.out.Files, kept)
	stall(st, st.status.Step, ReasonPeeringFailed, "%v; kept what was signed for %s before, the other peerings went on", err, peer)
	return nil
}
