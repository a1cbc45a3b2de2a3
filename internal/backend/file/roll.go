package file

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/atomicfile"
	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// The staged key of a rollover (backend.KeyRoller) in a state directory.
const (
	// NextKeyFile is the key gitpeer rotate-key staged: Ed25519, PEM
	// PKCS#8 as KeyFile, mode 0600.
	NextKeyFile = "cluster.key.next"
	// NextKeyMetaFile is what goes with NextKeyFile, YAML, mode 0600:
	//
	//	fingerprint: sha256:…   NextKeyFile's public key (handshake.Fingerprint)
	//	apiServer: https://…    the API server published at promotion; absent: unchanged
	//	announced: 2026-…Z      RFC 3339, when a pass first announced the key; absent: not yet
	//
	// It is written before NextKeyFile, which alone says a key is staged:
	// one without the other is a staging cut short (ignored, and removed by
	// the next Next) or a promotion cut short (completed by Next).
	NextKeyMetaFile = "cluster.key.next.yaml"

	// maxNextKeyMeta bounds what is read of NextKeyMetaFile: its three
	// fields take less than 300 bytes.
	maxNextKeyMeta = 4096
)

var _ backend.KeyRoller = (*Backend)(nil)

// nextKeyMeta is NextKeyMetaFile.
type nextKeyMeta struct {
	Fingerprint string `json:"fingerprint"`
	APIServer   string `json:"apiServer,omitempty"`
	Announced   string `json:"announced,omitempty"`
}

// parseNextKeyMeta parses the content of NextKeyMetaFile, read from path
// (named in errors). Announced is zero when the field is absent.
func parseNextKeyMeta(path string, data []byte) (nextKeyMeta, time.Time, error) {
	var m nextKeyMeta
	fail := func(format string, args ...any) (nextKeyMeta, time.Time, error) {
		return nextKeyMeta{}, time.Time{}, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	if len(data) > maxNextKeyMeta {
		return fail("more than %d bytes", maxNextKeyMeta)
	}
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return fail("malformed (want fingerprint, apiServer and announced): %v", err)
	}
	if m.Fingerprint == "" {
		return fail("no fingerprint")
	}
	if m.APIServer != "" {
		if err := layout.CheckAPIServer(m.APIServer); err != nil {
			return fail("apiServer: %v", err)
		}
	}
	var at time.Time
	if m.Announced != "" {
		var err error
		if at, err = time.Parse(time.RFC3339, m.Announced); err != nil {
			return fail("announced: %q is not an RFC 3339 time", m.Announced)
		}
	}
	return m, at, nil
}

// staged is the staged key as read from the state directory.
type staged struct {
	key       crypto.Signer
	keyPEM    []byte // NextKeyFile byte for byte: written as cluster.key at promotion
	meta      nextKeyMeta
	announced time.Time
}

func (s *staged) nextKey() *backend.NextKey {
	return &backend.NextKey{Signer: s.key, APIServer: s.meta.APIServer, Announced: s.announced}
}

// nextRecovery is what a damaged staged key tells the admin to do: the key
// was never in force, so staging another costs nothing.
const nextRecovery = "remove it and the other of " + NextKeyFile + ", " + NextKeyMetaFile + ", then stage a new key with gitpeer rotate-key"

// damagedNext is the error for a damaged file of the staged key.
func damagedNext(dir string, err error) error {
	return fmt.Errorf("state dir %s is %w: staged key: %v (%s)", dir, ErrDamaged, err, nextRecovery)
}

// readNext reads the staged key, or nil when none is. A NextKeyMetaFile
// without NextKeyFile (a staging or a promotion cut short) is removed.
func (b *Backend) readNext() (*staged, error) {
	keyPath := filepath.Join(b.dir, NextKeyFile)
	metaPath := filepath.Join(b.dir, NextKeyMetaFile)
	keyPEM, err := readPrivate(keyPath, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		if err := removeIfExists(metaPath); err != nil {
			return nil, err
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	key, err := handshake.ParsePrivateKey(keyPEM)
	if err != nil {
		return nil, damagedNext(b.dir, fmt.Errorf("%s: %v", keyPath, err))
	}
	data, err := readPrivate(metaPath, maxNextKeyMeta+1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, damagedNext(b.dir, fmt.Errorf("%s: missing, but %s is there", metaPath, NextKeyFile))
	}
	if err != nil {
		return nil, err
	}
	meta, at, err := parseNextKeyMeta(metaPath, data)
	if err != nil {
		return nil, damagedNext(b.dir, err)
	}
	fp, err := handshake.Fingerprint(key.Public())
	if err != nil {
		return nil, err
	}
	if meta.Fingerprint != fp {
		return nil, damagedNext(b.dir, fmt.Errorf("%s: fingerprint %s is not the one of %s, %s", metaPath, meta.Fingerprint, NextKeyFile, fp))
	}
	return &staged{key: key, keyPEM: keyPEM, meta: meta, announced: at}, nil
}

// readPrivate reads at most limit bytes of path, refusing a file others
// can read, as Open does.
func readPrivate(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkPrivate(path, fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// checkPrivate refuses the file at path, of info fi, when other users may
// read it (as ssh refuses such a key).
func checkPrivate(path string, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s: mode %04o lets other users read it; want 0600", path, fi.Mode().Perm())
	}
	return nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// currentKey reads KeyFile from disk (not the key Open loaded: another
// process may have promoted since).
func (b *Backend) currentKey() ([]byte, crypto.Signer, error) {
	data, err := readPrivate(filepath.Join(b.dir, KeyFile), 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, damaged(b.dir, KeyFile, errors.New("missing"))
	}
	if err != nil {
		return nil, nil, err
	}
	key, err := handshake.ParsePrivateKey(data)
	if err != nil {
		return nil, nil, damaged(b.dir, KeyFile, err)
	}
	return data, key, nil
}

// inForce says whether KeyFile holds the staged key s: a promotion that
// stopped before removing the staged files.
func (b *Backend) inForce(s *staged) (bool, error) {
	_, cur, err := b.currentKey()
	if err != nil {
		return false, err
	}
	return handshake.SameKey(cur.Public(), s.key.Public())
}

// finishPromotion completes a promotion once KeyFile holds s: the staged
// API server into config.yaml, the key into b, then the staged files
// removed (NextKeyFile first: it alone says a key is staged).
func (b *Backend) finishPromotion(s *staged) error {
	if s.meta.APIServer != "" && s.meta.APIServer != b.cfg.APIServer {
		cfg := b.cfg
		cfg.APIServer = s.meta.APIServer
		data, err := yaml.Marshal(cfg)
		if err != nil {
			return err
		}
		if err := writePrivate(filepath.Join(b.dir, ConfigFile), data); err != nil {
			return err
		}
		b.cfg = cfg
	}
	b.key = s.key
	if err := removeIfExists(filepath.Join(b.dir, NextKeyFile)); err != nil {
		return err
	}
	if err := removeIfExists(filepath.Join(b.dir, NextKeyMetaFile)); err != nil {
		return err
	}
	return atomicfile.SyncDir(b.dir)
}

// StageKey implements backend.KeyRoller: a new Ed25519 key into
// NextKeyMetaFile then NextKeyFile. A key staged already is returned,
// unless apiServer is not exactly the staged one ("" staged or asked
// meaning unchanged): an error naming both. A promotion cut short is
// completed first.
func (b *Backend) StageKey(ctx context.Context, apiServer string) (*backend.NextKey, error) {
	if apiServer != "" {
		if err := layout.CheckAPIServer(apiServer); err != nil {
			return nil, fmt.Errorf("api server: %w", err)
		}
	}
	next, err := b.Next(ctx)
	if err != nil {
		return nil, err
	}
	if next != nil {
		if err := next.Restage(apiServer); err != nil {
			return nil, fmt.Errorf("state dir %s: %v, or remove %s and %s to stage another", b.dir, err, NextKeyFile, NextKeyMetaFile)
		}
		return next, nil
	}
	key, err := handshake.GenerateKey()
	if err != nil {
		return nil, err
	}
	keyPEM, err := handshake.MarshalPrivateKey(key)
	if err != nil {
		return nil, err
	}
	fp, err := handshake.Fingerprint(key.Public())
	if err != nil {
		return nil, err
	}
	meta, err := yaml.Marshal(nextKeyMeta{Fingerprint: fp, APIServer: apiServer})
	if err != nil {
		return nil, err
	}
	if err := writePrivate(filepath.Join(b.dir, NextKeyMetaFile), meta); err != nil {
		return nil, err
	}
	if err := writePrivate(filepath.Join(b.dir, NextKeyFile), keyPEM); err != nil {
		return nil, err
	}
	return &backend.NextKey{Signer: key, APIServer: apiServer}, nil
}

// Next implements backend.KeyRoller: the key in NextKeyFile. When KeyFile
// already holds it (a promotion that stopped before removing the staged
// files), the promotion is completed and Next returns nil.
func (b *Backend) Next(context.Context) (*backend.NextKey, error) {
	s, err := b.readNext()
	if err != nil || s == nil {
		return nil, err
	}
	done, err := b.inForce(s)
	if err != nil {
		return nil, err
	}
	if done {
		return nil, b.finishPromotion(s)
	}
	return s.nextKey(), nil
}

// MarkAnnounced implements backend.KeyRoller: at (RFC 3339, UTC) as
// announced in NextKeyMetaFile, unless it holds a time already. Without a
// staged key it is an error wrapping backend.ErrNoNextKey.
func (b *Backend) MarkAnnounced(_ context.Context, at time.Time) error {
	if at.IsZero() {
		return errors.New("mark announced: zero time")
	}
	s, err := b.readNext()
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("state dir %s: %w", b.dir, backend.ErrNoNextKey)
	}
	if !s.announced.IsZero() {
		return nil
	}
	meta := s.meta
	meta.Announced = at.UTC().Format(time.RFC3339Nano)
	data, err := yaml.Marshal(meta)
	if err != nil {
		return err
	}
	return writePrivate(filepath.Join(b.dir, NextKeyMetaFile), data)
}

// PromoteNextKey implements backend.KeyRoller. The writes are ordered so
// that a crash at any point leaves a state directory Open accepts, with
// the old key or the new one in force, and PromoteNextKey (or Next) run
// again completes the promotion:
//  1. PreviousKeyFile = KeyFile (the key in force, byte for byte);
//  2. KeyFile = NextKeyFile;
//  3. config.yaml's apiServer = the staged one, if any;
//  4. NextKeyFile removed, then NextKeyMetaFile.
//
// When KeyFile already holds the staged key (stopped after 2), 1 and 2 are
// skipped and the key returned is PreviousKeyFile's. Without a staged key
// it is an error wrapping backend.ErrNoNextKey.
func (b *Backend) PromoteNextKey(ctx context.Context) (crypto.Signer, error) {
	s, err := b.readNext()
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("state dir %s: promote: %w", b.dir, backend.ErrNoNextKey)
	}
	curPEM, cur, err := b.currentKey()
	if err != nil {
		return nil, err
	}
	done, err := handshake.SameKey(cur.Public(), s.key.Public())
	if err != nil {
		return nil, err
	}
	if done {
		old, err := b.PreviousKey(ctx)
		if err != nil {
			return nil, fmt.Errorf("state dir %s: %s already holds the staged key, and the key it replaced is unknown: %w", b.dir, KeyFile, err)
		}
		return old, b.finishPromotion(s)
	}
	if err := writePrivate(filepath.Join(b.dir, PreviousKeyFile), curPEM); err != nil {
		return nil, err
	}
	if err := writePrivate(filepath.Join(b.dir, KeyFile), s.keyPEM); err != nil {
		return nil, err
	}
	if err := b.finishPromotion(s); err != nil {
		return nil, err
	}
	return cur, nil
}

// PreviousKey implements backend.KeyRoller: the key in PreviousKeyFile, or
// an error wrapping backend.ErrNoPreviousKey when there is none.
func (b *Backend) PreviousKey(context.Context) (crypto.Signer, error) {
	p := filepath.Join(b.dir, PreviousKeyFile)
	data, err := readPrivate(p, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p, backend.ErrNoPreviousKey)
	}
	if err != nil {
		return nil, err
	}
	key, err := handshake.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return key, nil
}
