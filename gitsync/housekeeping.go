package gitsync

import (
	"errors"
	"os"
	"path/filepath"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Limits past which the clone is repacked, git gc --auto's defaults
// (gc.auto, gc.autoPackLimit): each fetch adds a pack and each commit loose
// objects, and go-git never consolidates either, so without this a
// reconciler's clone grows a pack per pass and object lookups slow down
// with every pack they search.
var (
	maxLooseObjects = 6700
	maxPacks        = 50
)

// Housekeeping is what a Sync found in the clone once its pass landed:
// loose objects (counted up to maxLooseObjects+1) and packs, and whether it
// repacked them into one.
type Housekeeping struct {
	LooseObjects, Packs int
	Repacked            bool
}

// keepClean repacks the clone into one pack, dropping the loose objects and
// packs it holds, once it has more than maxLooseObjects loose objects or
// more than maxPacks packs. It runs under the Repo's lock and the checkout
// lock, so no other process of ours reads the clone meanwhile. A failure is
// returned but leaves a clone that works: go-git writes the new pack before
// it deletes anything, and Open repairs a pack index a crash cut short.
func (r *Repo) keepClean() (Housekeeping, error) {
	var h Housekeeping
	los, ok := r.repo.Storer.(storer.LooseObjectStorer)
	if !ok {
		return h, nil
	}
	errEnough := errors.New("enough")
	err := los.ForEachObjectHash(func(plumbing.Hash) error {
		h.LooseObjects++
		if h.LooseObjects > maxLooseObjects {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return h, err
	}
	if pos, ok := r.repo.Storer.(storer.PackedObjectStorer); ok {
		packs, err := pos.ObjectPacks()
		if err != nil {
			return h, err
		}
		h.Packs = len(packs)
	}
	if h.LooseObjects <= maxLooseObjects && h.Packs <= maxPacks {
		return h, nil
	}
	if err := r.repo.RepackObjects(&git.RepackConfig{}); err != nil {
		return h, err
	}
	h.Repacked = true
	// Forget the packs the repack deleted: their indexes and the
	// descriptors plainOpen keeps open.
	if fs, ok := r.repo.Storer.(*filesystem.Storage); ok {
		fs.Reindex()
		_ = fs.Close()
	}
	// Objects no ref reaches (commits of lost pushes) stay loose: prune
	// them, as git gc would after its grace period.
	if err = r.repo.Prune(git.PruneOptions{Handler: los.DeleteLooseObject}); err != nil {
		return h, err
	}
	// A pack left half-written by an earlier crash is garbage now.
	tmp, _ := filepath.Glob(filepath.Join(r.dir, ".git", "objects", "pack", "tmp_pack_*"))
	for _, f := range tmp {
		_ = os.Remove(f)
	}
	return h, nil
}

// Housekeeping returns what the last successful Sync found in the clone and
// did, and why a repack failed (the Sync itself did not).
func (r *Repo) Housekeeping() (Housekeeping, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.housekeeping, r.housekeepingErr
}
