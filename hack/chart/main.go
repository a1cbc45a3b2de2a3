// Command chart is what `make chart` runs: it packages manifests/chart
// with Helm's Go library (no helm CLI needed) as <dir>/gitpeer-<version>.tgz,
// the archive `helm install` and `helm push` take, with appVersion (the
// default image tag) set to the gitpeer version built.
//
//	go run ./hack/chart -app-version "$(git describe --always --dirty)" -out _output/chart
package main

import (
	"flag"
	"fmt"
	"os"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

func main() {
	dir := flag.String("chart", "manifests/chart", "the chart's directory")
	appVersion := flag.String("app-version", "", "the chart's appVersion: the image tag it runs by default (empty: keep Chart.yaml's)")
	out := flag.String("out", "_output/chart", "the directory to write the archive to")
	flag.Parse()
	if err := run(*dir, *appVersion, *out); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run(dir, appVersion, out string) error {
	ch, err := loader.Load(dir)
	if err != nil {
		return fmt.Errorf("load %s: %w", dir, err)
	}
	if appVersion != "" {
		ch.Metadata.AppVersion = appVersion
	}
	if err := ch.Validate(); err != nil {
		return fmt.Errorf("%s/Chart.yaml: %w", dir, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	path, err := chartutil.Save(ch, out)
	if err != nil {
		return err
	}
	fmt.Printf("chart %s %s (appVersion %s): %s\n", ch.Name(), ch.Metadata.Version, ch.Metadata.AppVersion, path)
	return nil
}
