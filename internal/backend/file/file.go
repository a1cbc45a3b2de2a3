// Package file is the file backend: one cluster's private material in a state
// directory (mode 0700, files 0600), for air-gapped admins, demos and tests.
//
//	<dir>/config.yaml           cluster ID and API server URL (public)
//	<dir>/cluster.key           Ed25519 key, PEM PKCS#8 (Liqo's privateKey format)
//	<dir>/cluster.key.previous  the key the last promotion replaced (same format)
//	<dir>/cluster.key.next      a key staged by gitpeer rotate-key (same format)
//	<dir>/cluster.key.next.yaml what goes with it (see NextKeyMetaFile)
//	<dir>/ca.crt, ca.key        the CA that signs client certificates
//	<dir>/nonce.secret          32 random bytes nonces are derived from
//	<dir>/kubeconfigs/<p>.kubeconfig  kubeconfigs obtained from providers
package file

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/internal/atomicfile"
	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/pins"
)

// File names inside a state directory.
const (
	ConfigFile      = "config.yaml"
	KeyFile         = "cluster.key"
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	NonceSecretFile = "nonce.secret"
	KubeconfigDir   = "kubeconfigs"

	nonceSecretSize = 32
	caLifetime      = 10 * 365 * 24 * time.Hour
)

// ErrNotInitialized means the state directory does not exist or holds no
// gitpeer state: run `gitpeer init`.
var ErrNotInitialized = errors.New("state directory not initialized (run gitpeer init)")

// Config is <dir>/config.yaml.
type Config struct {
	ClusterID string `json:"clusterID"`
	APIServer string `json:"apiServer"`
}

// Backend is a state directory opened for use. It implements backend.Backend.
type Backend struct {
	dir    string
	cfg    Config
	key    crypto.Signer
	ca     *handshake.CA
	secret []byte
	// Now is the clock certificates are issued by; time.Now by default.
	Now func() time.Time
}

// InitOptions are the inputs of Init.
type InitOptions struct {
	ClusterID string
	APIServer string // https URL consumers reach the API server at
	// CACertPEM and CAKeyPEM import an existing cluster CA (e.g. kubeadm's
	// pki/ca.crt and ca.key) so that certificates signed offline authenticate
	// to that cluster. Both empty: a fresh CA is created.
	CACertPEM, CAKeyPEM []byte
	Now                 time.Time
}

// Init creates the state directory dir for a cluster, or opens it when it
// already holds state for the same cluster ID (keys are never rotated
// silently). A directory holding another cluster's state, or files that are
// not gitpeer's, is refused. Creation is atomic: the state is written to a
// sibling temporary directory and renamed into place, so a failure leaves
// nothing half-written.
func Init(dir string, opts InitOptions) (*Backend, bool, error) {
	if b, err := Open(dir); err == nil {
		if b.cfg.ClusterID != opts.ClusterID {
			return nil, false, fmt.Errorf("state dir %s: holds cluster %q, not %q", dir, b.cfg.ClusterID, opts.ClusterID)
		}
		return b, false, nil
	} else if !errors.Is(err, ErrNotInitialized) {
		return nil, false, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, false, fmt.Errorf("state dir %s: not empty and not a gitpeer state dir; refusing to write into it", dir)
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	files, err := newState(opts)
	if err != nil {
		return nil, false, fmt.Errorf("state dir %s: %w", dir, err)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, false, fmt.Errorf("state dir %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, ".gitpeer-init-*")
	if err != nil {
		return nil, false, fmt.Errorf("state dir %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o700); err != nil {
		return nil, false, err
	}
	for name, data := range files {
		if err := atomicfile.Write(filepath.Join(tmp, name), data, 0o600); err != nil {
			return nil, false, fmt.Errorf("state dir %s: %w", dir, err)
		}
	}
	_ = os.Remove(dir) // an empty directory may stand where the state goes
	if err := os.Rename(tmp, dir); err != nil {
		return nil, false, fmt.Errorf("state dir %s: %w", dir, err)
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return nil, false, fmt.Errorf("state dir %s: %w", dir, err)
	}
	b, err := Open(dir)
	return b, true, err
}

func newState(opts InitOptions) (map[string][]byte, error) {
	key, err := handshake.GenerateKey()
	if err != nil {
		return nil, err
	}
	keyPEM, err := handshake.MarshalPrivateKey(key)
	if err != nil {
		return nil, err
	}
	caCert, caKey := opts.CACertPEM, opts.CAKeyPEM
	switch {
	case len(caCert) == 0 && len(caKey) == 0:
		ca, k, err := handshake.NewCA(opts.ClusterID+"-gitpeer-ca", opts.Now, caLifetime)
		if err != nil {
			return nil, err
		}
		caCert, caKey = ca.CertPEM, k
	case len(caCert) == 0 || len(caKey) == 0:
		return nil, errors.New("importing a CA needs both its certificate and its key")
	default:
		if _, err := handshake.LoadCA(caCert, caKey); err != nil {
			return nil, fmt.Errorf("import CA: %w", err)
		}
	}
	secret := make([]byte, nonceSecretSize)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	cfg, err := yaml.Marshal(Config{ClusterID: opts.ClusterID, APIServer: opts.APIServer})
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		ConfigFile:      cfg,
		KeyFile:         keyPEM,
		CACertFile:      caCert,
		CAKeyFile:       caKey,
		NonceSecretFile: secret,
	}, nil
}

// ErrDamaged means the state directory holds gitpeer state with a file
// missing, cut short or unreadable: a lost file, a bad restore, a disk
// error. Nothing replaces such state silently, not even Init: a new key
// would read as a key change to every peer.
var ErrDamaged = errors.New("damaged")

// recovery is what an error wrapping ErrDamaged tells the admin to do.
const recovery = "restore the state dir from a backup; if its key is lost for good, move the directory aside " +
	"and run gitpeer init for a new identity, which every peer's admin must then re-pin with gitpeer trust"

// damaged is the error for a damaged file of state directory dir.
func damaged(dir, file string, err error) error {
	return fmt.Errorf("state dir %s is %w: %s: %v (%s)", dir, ErrDamaged, filepath.Join(dir, file), err, recovery)
}

// stateEntries are the names in a state directory that only gitpeer
// state has: one of them without config.yaml is damaged state, not none.
var stateEntries = []string{KeyFile, CACertFile, CAKeyFile, NonceSecretFile, PinsFile, PreviousKeyFile, NextKeyFile, NextKeyMetaFile, KubeconfigDir, TokenDir, "checkout", "checkout.lock"}

// Open loads the state directory dir. It refuses a directory that others can
// read or enter (as ssh refuses a world-readable key). Errors wrap
// ErrNotInitialized when there is no state (no directory, or one without
// any of gitpeer's files), and ErrDamaged, naming the file and how to
// recover, when a state file is missing, cut short or does not parse.
func Open(dir string) (*Backend, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("state dir %s: %w", dir, ErrNotInitialized)
	}
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("state dir %s: not a directory", dir)
	}
	cfgData, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if errors.Is(err, fs.ErrNotExist) {
		for _, name := range stateEntries {
			if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
				return nil, damaged(dir, ConfigFile, fmt.Errorf("missing, but %s is there", name))
			}
		}
		return nil, fmt.Errorf("state dir %s: %w", dir, ErrNotInitialized)
	}
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("state dir %s: mode %04o lets other users in; want 0700 (chmod 700 %s)", dir, perm, dir)
	}
	b := &Backend{dir: dir, Now: time.Now}
	if err := yaml.UnmarshalStrict(cfgData, &b.cfg); err != nil {
		return nil, damaged(dir, ConfigFile, fmt.Errorf("malformed (want clusterID and apiServer): %v", err))
	}
	if err := layout.CheckClusterID(b.cfg.ClusterID); err != nil {
		return nil, damaged(dir, ConfigFile, fmt.Errorf("malformed (want clusterID and apiServer): clusterID: %v", err))
	}
	read := func(name string) ([]byte, error) {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, damaged(dir, name, errors.New("missing"))
		}
		if err != nil {
			return nil, damaged(dir, name, err)
		}
		if err := checkPrivate(p, fi); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, damaged(dir, name, err)
		}
		return data, nil
	}
	keyPEM, err := read(KeyFile)
	if err != nil {
		return nil, err
	}
	if b.key, err = handshake.ParsePrivateKey(keyPEM); err != nil {
		return nil, damaged(dir, KeyFile, err)
	}
	caCert, err := read(CACertFile)
	if err != nil {
		return nil, err
	}
	caKey, err := read(CAKeyFile)
	if err != nil {
		return nil, err
	}
	if b.ca, err = handshake.LoadCA(caCert, caKey); err != nil {
		// A key that parses but is not the certificate's names the
		// certificate, as a mismatch always did.
		name := CACertFile
		if _, ok := errors.AsType[*handshake.CAKeyError](err); ok {
			name = CAKeyFile
		}
		return nil, damaged(dir, name, err)
	}
	if b.secret, err = read(NonceSecretFile); err != nil {
		return nil, err
	}
	if len(b.secret) < nonceSecretSize {
		return nil, damaged(dir, NonceSecretFile, fmt.Errorf("%d bytes, want at least %d", len(b.secret), nonceSecretSize))
	}
	return b, nil
}

// Dir is the state directory.
func (b *Backend) Dir() string { return b.dir }

// Config returns the public configuration of the state directory.
func (b *Backend) Config() Config { return b.cfg }

// ClusterID implements backend.Backend.
func (b *Backend) ClusterID() string { return b.cfg.ClusterID }

// Signer implements backend.Backend.
func (b *Backend) Signer() crypto.Signer { return b.key }

// Nonce implements backend.Backend: handshake.DeriveNonce over the state's secret.
func (b *Backend) Nonce(consumerID string, epoch uint64) (string, error) {
	return handshake.DeriveNonce(b.secret, consumerID, epoch), nil
}

// SignCSR implements backend.Backend with the state directory's CA.
func (b *Backend) SignCSR(_ context.Context, csrPEM []byte, lifetime time.Duration) ([]byte, error) {
	return b.ca.SignCSR(csrPEM, b.Now(), lifetime)
}

// CABundle implements backend.Backend.
func (b *Backend) CABundle() []byte { return b.ca.CertPEM }

// KubeconfigPath is where the kubeconfig for providerID is stored.
func (b *Backend) KubeconfigPath(providerID string) string {
	return filepath.Join(b.dir, KubeconfigDir, providerID+".kubeconfig")
}

// StoreKubeconfig implements backend.Backend: <dir>/kubeconfigs/<provider>.kubeconfig,
// mode 0600, replaced atomically and only when its content changes.
func (b *Backend) StoreKubeconfig(_ context.Context, identity *authv1beta1.Identity) (string, error) {
	keyPEM, err := handshake.MarshalPrivateKey(b.key)
	if err != nil {
		return "", err
	}
	data, err := liqo.Kubeconfig(identity, keyPEM)
	if err != nil {
		return "", err
	}
	p := b.KubeconfigPath(string(identity.Spec.ClusterID))
	if old, err := os.ReadFile(p); err == nil && string(old) == string(data) {
		return p, nil
	}
	if err := writePrivate(p, data); err != nil {
		return "", err
	}
	return p, nil
}

// ClusterInfo is the cluster.yaml this cluster publishes: public facts only.
func (b *Backend) ClusterInfo() (*layout.ClusterInfo, error) {
	return layout.NewClusterInfo(b.cfg.ClusterID, b.key.Public(), b.cfg.APIServer, b.ca.CertPEM)
}

// TokenDir holds the tokens shared with peers: <dir>/tokens/<peer>.token.
const TokenDir = "tokens"

func (b *Backend) tokenPath(peer string) string {
	return filepath.Join(b.dir, TokenDir, peer+".token")
}

// Token implements backend.TokenStore.
func (b *Backend) Token(_ context.Context, peer string) ([]byte, error) {
	data, err := os.ReadFile(b.tokenPath(peer))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", b.tokenPath(peer), backend.ErrNoToken)
	}
	if err != nil {
		return nil, err
	}
	tok := bytes.TrimSpace(data)
	if len(tok) == 0 {
		return nil, fmt.Errorf("%s: empty: %w", b.tokenPath(peer), backend.ErrNoToken)
	}
	return tok, nil
}

// SetToken implements backend.TokenStore: <dir>/tokens/<peer>.token, 0600.
func (b *Backend) SetToken(_ context.Context, peer string, token []byte) error {
	if len(bytes.TrimSpace(token)) == 0 {
		return errors.New("empty token")
	}
	return writePrivate(b.tokenPath(peer), append(bytes.TrimSpace(token), '\n'))
}

// RemoveKubeconfig implements backend.KubeconfigRemover.
func (b *Backend) RemoveKubeconfig(_ context.Context, providerID string) error {
	err := os.Remove(b.KubeconfigPath(providerID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// writePrivate replaces path atomically (atomicfile.Write) with a 0600
// file, creating its directory 0700.
func writePrivate(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// PinsFile is the pin store's file in the state directory.
const PinsFile = "pins.yaml"

// LoadPins implements backend.PinKeeper: <state-dir>/pins.yaml.
func (b *Backend) LoadPins(_ context.Context) (*pins.Store, error) {
	p := filepath.Join(b.dir, PinsFile)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return pins.New(b.cfg.ClusterID), nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read no more than one byte past the cap: pins.Parse refuses a larger
	// store, and a huge one must not be held in memory to be refused.
	data, err := io.ReadAll(io.LimitReader(f, pins.MaxStoreSize+1))
	if err != nil {
		return nil, err
	}
	s, err := pins.Parse(p, data)
	if err != nil {
		return nil, fmt.Errorf("%w (restore it from a backup, or remove it to trust every peer anew)", err)
	}
	return s, nil
}

// SavePins implements backend.PinKeeper: replaced with atomicfile.Write, so
// a crash leaves the old store or the new one, never half.
func (b *Backend) SavePins(_ context.Context, s *pins.Store) error {
	data, err := s.Encode()
	if err != nil {
		return err
	}
	return writePrivate(filepath.Join(b.dir, PinsFile), data)
}

var _ backend.PinKeeper = (*Backend)(nil)

// PreviousKeyFile keeps the key the last PromoteNextKey replaced, so that
// a rotation statement can be signed again if the first publication was
// lost.
const PreviousKeyFile = "cluster.key.previous"
