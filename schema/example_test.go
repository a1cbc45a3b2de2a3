package schema_test

import (
	"errors"
	"fmt"

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
