package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"strings"

	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/dirmanifest"
)

// refusedFolder is the first folder of the peering with peer that is
// refused for its number of entries (layout.ErrTooManyEntries), as its
// error, or nil: this cluster's inbox folder of peer, which it reads, and
// its own folder in peer's inbox, which it writes. Probing a name in each
// decodes nothing more than reading it would, and a refused tree is
// refused from its size or count before any entry is decoded.
func (p *pass) refusedFolder(peer string) error {
	for _, dir := range []string{layout.ClusterPath(p.self, layout.InboxDir, peer), layout.ClusterPath(peer, layout.InboxDir, p.self)} {
		if _, err := fs.Stat(p.raw, path.Join(dir, dirmanifest.FileName)); errors.Is(err, layout.ErrTooManyEntries) {
			var tooMany *layout.TooManyEntriesError
			if errors.As(err, &tooMany) {
				return tooMany
			}
			return err
		}
	}
	return nil
}

// confine runs run, one peering's part of the pass with peer, so that its
// failure stays with that peering: the files run wrote for peer (its
// rendered objects and this cluster's folder in peer's inbox) are put back
// as they were before run, what this cluster signed there earlier is
// carried, run's Identities and Certificates are dropped, and st is
// Stalled PeeringFailed (TooManyEntries, without running run, when a
// folder of the peering is too large to read: refusedFolder). Only a
// cancelled or expired ctx, which ends the whole pass, is returned: also
// before run, so that a pass of a thousand peerings stops at the next one
// once SIGTERM ends ctx.
func (p *pass) confine(ctx context.Context, peer string, st *peeringObject, run func() error) error {
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
	reason := reasons.PeeringFailed
	// A folder of the peering too large to read is not read at all (run
	// would find its artifacts missing and act on that): run is skipped,
	// and st is Stalled TooManyEntries.
	err := p.refusedFolder(peer)
	if err != nil {
		reason = reasons.TooManyEntries
		err = fmt.Errorf("%w: nothing of this peering is read or written until it is back under its cap (revert the commit that added them)", err)
	} else if err = run(); err == nil {
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
	// What this pass wrote before run, for the other role of a two-way
	// peering, wins over the earlier state carry brought back.
	maps.Copy(p.out.Files, kept)
	step := st.status.Step
	if reason == reasons.TooManyEntries {
		step = st.prevStep // nothing was read to move it
	}
	stall(st, step, reason, "%v; kept what was signed for %s before, the other peerings went on", err, peer)
	return nil
}
