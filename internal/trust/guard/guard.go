// Package guard refuses private material before it enters Git.
//
// Invariant 1 of the design says no private key, no kubeconfig carrying
// client credentials and no AWS secret access key may ever appear in any blob
// of any commit of a peering repo: the repo is read by every peer cluster and
// by whoever reviews it, and Git history is forever. gitsync calls Check on
// every file a pass writes and refuses the whole commit when one fails;
// ScanHistory audits what an existing repository already holds.
//
// The checks are deliberately conservative (a false alarm costs a failed pass
// with a clear message; a miss leaks a key for good) and tolerant of any
// input: content may be YAML, multi-document YAML, JSON, an env file or
// arbitrary bytes, and nothing in it can make the checker panic.
package guard

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// ErrSecret is wrapped by every refusal of Check: the content holds private
// material (or, failing closed, could not be checked at all).
var ErrSecret = errors.New("private material")

const (
	// maxDepth bounds how many times decoded or embedded content is checked
	// again (a Secret holding a base64 kubeconfig holding base64 key data is
	// depth 2); deeper nesting is not looked into.
	maxDepth = 4
	// minBase64 is the shortest base64 token worth decoding. The smallest
	// secret we look for inside base64, an AWS key assignment, encodes to more
	// than this; shorter tokens are ordinary words, names and hashes.
	minBase64 = 32
)

var (
	// pemPrivate matches the armour line of any PEM block whose type ends in
	// "PRIVATE KEY": PKCS#8, PKCS#1 (RSA), SEC 1 (EC), DSA, OPENSSH, ENCRYPTED,
	// and OpenPGP's "PRIVATE KEY BLOCK". The header alone is enough: a
	// truncated key is still a leaked key.
	pemPrivate = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----`)
	// awsRaw finds AWS secret keys in text that did not parse as YAML/JSON or
	// that YAML cannot see (env files, INI credentials, escaped JSON strings).
	awsRaw = regexp.MustCompile(`(?i)aws_?secret_?access_?key[\\"']*[ \t]*[:=][ \t]*[\\"']*[A-Za-z0-9/+]{8,}`)
	// clientKeyRaw is the text fallback for kubeconfig client keys.
	clientKeyRaw = regexp.MustCompile(`client-key(?:-data)?[\\"']*[ \t]*:[ \t]*[\\"']*[A-Za-z0-9/+=._~-]`)
)

// Check returns nil when content may be committed at path, and otherwise an
// error that wraps ErrSecret and names path, the place in the content and
// what was found.
//
// Refused: any PEM block whose type ends in "PRIVATE KEY" (also DER-encoded
// keys and OpenSSH private keys), found in the raw text, in YAML/JSON string
// values or inside base64 (a Secret's data, a kubeconfig's client-key-data),
// decoded and checked again up to a bounded depth; a kubeconfig user with a
// non-empty client-key, client-key-data, token, password or auth-provider
// token; a key named awsSecretAccessKey, aws_secret_access_key or
// AWS_SECRET_ACCESS_KEY (any case or separator) with a non-empty scalar value,
// also as a Kubernetes env var (name/value) and in env or INI text.
//
// Accepted: public keys, certificates, CSRs, Liqo nonces and anything else.
//
// Check fails closed: if the checker itself breaks on some input, the error
// still wraps ErrSecret.
func Check(path string, content []byte) (err error) {
	return (*Cache)(nil).Check(path, content)
}

// Inspect is Check without a path: it reports whether content holds private
// material and, if so, a human-readable reason locating it (for example
// `line 4: users[0].user.client-key-data: kubeconfig client key`).
func Inspect(content []byte) (reason string, found bool) {
	defer func() {
		// Never panic on hostile input; refusing is the safe answer.
		if r := recover(); r != nil {
			reason, found = fmt.Sprintf("content could not be checked (internal error: %v)", r), true
		}
	}()
	s := &scanner{seen: map[[32]byte]bool{}}
	if f := s.scan(content, 0); f != "" {
		return f, true
	}
	return "", false
}

// scanner holds the state of one Check: decoded content already examined,
// so the structured and the raw passes never redo each other's work.
type scanner struct {
	seen map[[32]byte]bool
}

// scan returns a non-empty reason when content holds private material.
func (s *scanner) scan(content []byte, depth int) string {
	if depth > maxDepth {
		return ""
	}
	key := sha256.Sum256(content)
	if s.seen[key] {
		return ""
	}
	s.seen[key] = true

	if m := pemPrivate.FindSubmatchIndex(content); m != nil {
		return fmt.Sprintf("line %d: PEM block %q", lineAt(content, m[0]), content[m[2]:m[3]])
	}
	if what := binaryKey(content); what != "" {
		return what
	}
	// Structured first: it names the field, which makes the message useful.
	if utf8.Valid(content) {
		if f := s.structured(content, depth); f != "" {
			return f
		}
	}
	// awsRaw has no literal prefix for the regexp engine to skip to
	// (case-insensitive): it tried a match at every byte. Every match
	// starts with "aw" in some case ('a' and 'w' have no other Unicode
	// case folds), so content without one cannot match.
	if hasFoldAW(content) {
		if m := awsRaw.FindIndex(content); m != nil {
			return fmt.Sprintf("line %d: AWS secret access key", lineAt(content, m[0]))
		}
	}
	if m := clientKeyRaw.FindIndex(content); m != nil {
		return fmt.Sprintf("line %d: kubeconfig client key", lineAt(content, m[0]))
	}
	return s.base64Runs(content, depth)
}

// binaryKey recognises private keys that are not PEM-armoured: DER (PKCS#8,
// PKCS#1, SEC 1) as found after base64-decoding a Secret value, and the
// OpenSSH binary format.
func binaryKey(b []byte) string {
	if bytes.HasPrefix(b, []byte("openssh-key-v1\x00")) {
		return "OpenSSH private key"
	}
	if len(b) < 32 || b[0] != 0x30 { // DER keys are ASN.1 SEQUENCEs
		return ""
	}
	if !firstIsInteger(b) {
		return "" // a certificate, a public key: no parser below can accept it
	}
	return binaryKeyNoShortcut(b)
}

// binaryKeyNoShortcut is binaryKey's three parses of a DER SEQUENCE.
func binaryKeyNoShortcut(b []byte) string {
	if _, err := x509.ParsePKCS8PrivateKey(b); err == nil {
		return "DER private key (PKCS#8)"
	}
	if _, err := x509.ParsePKCS1PrivateKey(b); err == nil {
		return "DER private key (PKCS#1)"
	}
	if _, err := x509.ParseECPrivateKey(b); err == nil {
		return "DER private key (SEC 1)"
	}
	return ""
}

// firstIsInteger reports whether the DER SEQUENCE b may begin with an
// INTEGER, as every private key format binaryKey parses does (PKCS#8,
// PKCS#1 and SEC 1 all start with a version): false only when its
// header is well-formed and the first element's tag is another, which
// those parsers refuse, so that a certificate or a public key (found
// base64-decoded in every Identity) skips three ASN.1 parses.
func firstIsInteger(b []byte) bool {
	if len(b) < 2 {
		return true
	}
	at := 2 // the tag after a short-form length
	if n := int(b[1]); n > 0x80 && n <= 0x84 {
		at += n - 0x80 // long form: n-0x80 length bytes
	} else if n >= 0x80 {
		return true // indefinite or oversized: leave it to the parsers
	}
	return at >= len(b) || b[at] == 0x02
}

// hasFoldAW reports whether b holds "aw" in any case.
func hasFoldAW(b []byte) bool {
	for i := 0; i+1 < len(b); i++ {
		if b[i]|0x20 == 'a' && b[i+1]|0x20 == 'w' {
			return true
		}
	}
	return false
}

// structured parses content as (multi-document) YAML, which covers JSON, and
// walks every document. Parsing stops quietly at the first document YAML
// rejects: the raw scans that follow still cover the whole text.
func (s *scanner) structured(content []byte, depth int) (found string) {
	dec := yaml.NewDecoder(bytes.NewReader(content))
	for {
		var doc yaml.Node
		if err := decodeSafely(dec, &doc); err != nil {
			return ""
		}
		w := walker{s: s, depth: depth, visited: map[*yaml.Node]bool{}}
		if f := w.node(&doc, ""); f != "" {
			return f
		}
	}
}

// decodeSafely decodes the next document, turning a parser panic into an
// error so that malformed input only ends the structured pass.
func decodeSafely(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml parser panic: %v", r)
		}
	}()
	err = dec.Decode(n)
	if err == nil && n.Kind == 0 {
		err = io.EOF
	}
	return err
}

// walker visits the nodes of one YAML document.
type walker struct {
	s     *scanner
	depth int
	// visited makes aliases cost nothing: each node is examined once, so a
	// "billion laughs" document is linear.
	visited map[*yaml.Node]bool
}

func (w *walker) node(n *yaml.Node, at string) string {
	if n == nil || w.visited[n] {
		return ""
	}
	w.visited[n] = true
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if f := w.node(c, at); f != "" {
				return f
			}
		}
	case yaml.AliasNode:
		return w.node(n.Alias, at)
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if f := w.node(c, at+"["+strconv.Itoa(i)+"]"); f != "" {
				return f
			}
		}
	case yaml.MappingNode:
		return w.mapping(n, at)
	case yaml.ScalarNode:
		return w.scalar(n, at)
	}
	return ""
}

func (w *walker) mapping(n *yaml.Node, at string) string {
	if f := envVar(n, at); f != "" {
		return f
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		field := join(at, name)
		switch normalize(name) {
		case "awssecretaccesskey":
			if nonEmpty(v) {
				return fmt.Sprintf("line %d: %s: AWS secret access key", v.Line, field)
			}
		case "clientkeydata", "clientkey":
			if nonEmpty(v) {
				return fmt.Sprintf("line %d: %s: kubeconfig client key", v.Line, field)
			}
		case "users":
			if f := kubeconfigUsers(v, field); f != "" {
				return f
			}
		}
		if f := w.node(v, field); f != "" {
			return f
		}
	}
	return ""
}

// scalar re-checks string values whose content the raw scans of the
// enclosing text cannot see whole: base64 values (decoded here so the message
// names the field) and multi-line values (embedded documents such as a
// kubeconfig in a ConfigMap, or JSON strings with escaped newlines).
func (w *walker) scalar(n *yaml.Node, at string) string {
	v := n.Value
	if t := strings.Join(strings.Fields(v), ""); len(t) >= minBase64 && isBase64Token(t) {
		if b, ok := decodeBase64(t); ok {
			if f := w.s.scan(b, w.depth+1); f != "" {
				return fmt.Sprintf("line %d: %s (base64-decoded): %s", n.Line, at, f)
			}
		}
	}
	if strings.Contains(v, "\n") {
		if f := w.s.scan([]byte(v), w.depth+1); f != "" {
			return fmt.Sprintf("line %d: %s: %s", n.Line, at, f)
		}
	}
	return ""
}

// kubeconfigUsers checks a kubeconfig "users" list: a user entry carrying
// client credentials makes the file a login, not configuration.
func kubeconfigUsers(n *yaml.Node, at string) string {
	if n.Kind != yaml.SequenceNode {
		return ""
	}
	for i, item := range n.Content {
		user := lookup(item, "user")
		if user == nil || user.Kind != yaml.MappingNode {
			continue
		}
		base := at + "[" + strconv.Itoa(i) + "].user"
		for _, k := range []string{"client-key", "client-key-data", "token", "password"} {
			if v := lookup(user, k); v != nil && nonEmpty(v) {
				return fmt.Sprintf("line %d: %s.%s: kubeconfig user credential", v.Line, base, k)
			}
		}
		cfg := lookup(lookup(user, "auth-provider"), "config")
		for _, k := range []string{"access-token", "refresh-token", "id-token", "client-secret"} {
			if v := lookup(cfg, k); v != nil && nonEmpty(v) {
				return fmt.Sprintf("line %d: %s.auth-provider.config.%s: kubeconfig user credential", v.Line, base, k)
			}
		}
	}
	return ""
}

// envVar catches a Kubernetes env entry {name: AWS_SECRET_ACCESS_KEY, value: …}.
func envVar(n *yaml.Node, at string) string {
	name := lookup(n, "name")
	if name == nil || name.Kind != yaml.ScalarNode || normalize(name.Value) != "awssecretaccesskey" {
		return ""
	}
	if v := lookup(n, "value"); v != nil && nonEmpty(v) {
		return fmt.Sprintf("line %d: %s: AWS secret access key", v.Line, join(at, "value"))
	}
	return ""
}

// lookup returns the value of key in mapping n, or nil.
func lookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v := n.Content[i+1]
			if v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			return v
		}
	}
	return nil
}

// nonEmpty reports whether n is a scalar with a value. A mapping (a reference
// such as {secretKeyRef: …}) or null is not a secret by itself.
func nonEmpty(n *yaml.Node) bool {
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" && strings.TrimSpace(n.Value) != ""
}

// normalize folds the spellings of one key (awsSecretAccessKey,
// aws_secret_access_key, AWS-SECRET-ACCESS-KEY) together.
func normalize(k string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '_' || r == '-':
			return -1
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return r
	}, k)
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// base64Runs decodes the base64 in raw text and checks it again: single
// tokens (a Secret value, client-key-data) and groups of equally long lines,
// which is how base64 looks when wrapped (PEM bodies, `base64` output pasted
// into a block scalar).
func (s *scanner) base64Runs(content []byte, depth int) string {
	var tokens [][]byte
	flush := func() string {
		defer func() { tokens = tokens[:0] }()
		for i, t := range tokens {
			if len(t) >= minBase64 {
				if f := s.decoded(content, t, depth); f != "" {
					return f
				}
			}
			// A wrapped group: lines of one length (a multiple of 4),
			// then possibly one shorter last line. Only the first line
			// starts one, which keeps this linear.
			l := len(t)
			if l < 16 || l%4 != 0 || i > 0 && len(tokens[i-1]) == l {
				continue
			}
			j := i + 1
			for j < len(tokens) && len(tokens[j]) == l {
				j++
			}
			if j < len(tokens) && len(tokens[j]) < l {
				j++
			}
			if j-i >= 2 {
				if f := s.decoded(content, bytes.Join(tokens[i:j], nil), depth); f != "" {
					return f
				}
			}
		}
		return ""
	}
	start := -1
	for i := 0; i <= len(content); i++ {
		if i < len(content) && isBase64Byte(content[i]) && content[i] != '=' {
			if start < 0 {
				start = i
			}
			continue
		}
		if i < len(content) && content[i] == '=' {
			// '=' is padding: it ends a token ("key=<base64>" holds one).
			for i+1 < len(content) && content[i+1] == '=' {
				i++
			}
			if start >= 0 {
				tokens = append(tokens, content[start:i+1])
				start = -1
			}
			if f := flush(); f != "" {
				return f
			}
			continue
		}
		if start >= 0 {
			tokens = append(tokens, content[start:i])
			start = -1
		}
		// Whitespace continues a run of tokens; anything else ends it.
		if i == len(content) || !isSpace(content[i]) {
			if f := flush(); f != "" {
				return f
			}
		}
	}
	return ""
}

// decoded decodes one base64 token found in content and checks the result.
func (s *scanner) decoded(content, token []byte, depth int) string {
	b, ok := decodeBase64(string(token))
	if !ok {
		return ""
	}
	if f := s.scan(b, depth+1); f != "" {
		off := bytes.Index(content, token)
		if off < 0 { // a joined group: locate its first line
			off = bytes.Index(content, token[:16])
		}
		return fmt.Sprintf("line %d: base64-decoded: %s", lineAt(content, off), f)
	}
	return ""
}

// decodeBase64 decodes standard or URL-safe base64, padded or not.
func decodeBase64(t string) ([]byte, bool) {
	t = strings.TrimRight(t, "=")
	if strings.ContainsRune(t, '=') {
		return nil, false
	}
	if len(t)%4 == 1 { // cannot be valid; tolerate one stray trailing byte
		t = t[:len(t)-1]
	}
	enc := base64.RawStdEncoding
	if strings.ContainsAny(t, "-_") {
		if strings.ContainsAny(t, "+/") {
			return nil, false
		}
		enc = base64.RawURLEncoding
	}
	b, err := enc.DecodeString(t)
	return b, err == nil
}

func isBase64Token(t string) bool {
	for i := 0; i < len(t); i++ {
		if !isBase64Byte(t[i]) {
			return false
		}
	}
	return true
}

func isBase64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '+' || c == '/' || c == '=' || c == '-' || c == '_'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// lineAt returns the 1-based line of byte offset off.
func lineAt(b []byte, off int) int {
	if off < 0 || off > len(b) {
		return 0
	}
	return bytes.Count(b[:off], []byte("\n")) + 1
}
