package schema_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitpeer/gitpeer/schema"
)

func ExampleParse() {
	spec, err := schema.Parse("peering.cue", []byte(`// Peering spec for the demo.
clusters: [
	{id: "alpha"},
	{id: "Beta"},
]
peerings: [
	{consumer: "alpha", provider: "gamma"},
	{consumer: "alpha"},
]
`))
	var perr *schema.Error
	if errors.As(err, &perr) {
		for _, p := range perr.Problems {
			fmt.Println(p)
		}
		return
	}
	fmt.Println(spec, err)
	// Output:
	// peering.cue:4:7: clusters[1].id: invalid cluster id "Beta": want a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)
	// peering.cue:7:32: peerings[0].provider: unknown cluster "gamma" (known: alpha)
	// peering.cue:8:2: peerings[1].provider: field is required but not present
}

func ExampleParse_yaml() {
	spec, err := schema.Parse("peering.yaml", []byte(`
clusters:
  - id: alpha
  - id: beta
peerings:
  - consumer: alpha
    provider: beta
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	asConsumer, asProvider := spec.PeeringsOf("beta")
	fmt.Println(len(spec.Clusters), "clusters;", "beta consumes", len(asConsumer), "and provides", len(asProvider))
	fmt.Println(spec.HasPeering("alpha", "beta"), spec.HasPeering("beta", "alpha"))
	// Output:
	// 2 clusters; beta consumes 0 and provides 1
	// true false
}

func ExampleLoadBounded() {
	dir, err := os.MkdirTemp("", "peering-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// Nested comprehensions: 10^8 lists, hours of CPU for CUE.
	bomb := `l: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
a: [for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l {l}]
`
	if err := os.WriteFile(filepath.Join(dir, "peering.cue"), []byte(bomb), 0o644); err != nil {
		panic(err)
	}
	// The binary must call schema.RunEvaluatorIfChild first thing in main
	// (here, in TestMain).
	_, file, err := schema.LoadBounded(context.Background(), dir, schema.Limits{Timeout: time.Second})
	fmt.Println(errors.Is(err, schema.ErrSpecTooCostly))
	fmt.Println(strings.TrimPrefix(err.Error(), filepath.Dir(file)+string(filepath.Separator)))
	// Output:
	// true
	// peering.cue: evaluation exceeded 1s (raise --spec-timeout)
}
