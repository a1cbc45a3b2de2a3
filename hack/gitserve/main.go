// Command gitserve serves the bare Git repositories under -root over Git's
// smart HTTP protocol, by running git-http-backend as a CGI program. The e2e
// suite uses it so that the reconcilers (go-git) and the git CLI reach the
// peering repo exactly as they would reach a Git host: over http://, with
// info/refs discovery, upload-pack and receive-pack.
//
// It binds to loopback only and has no authentication: it is a test fixture,
// never a server to expose. With -addr 127.0.0.1:0 the kernel picks a free
// port; the first line on stdout is the base URL, for the caller to read.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gitpeer/gitpeer/test/testgit"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address; must be on loopback (port 0: any free port)")
	root := flag.String("root", ".", "directory holding the bare repositories (<name>.git)")
	backend := flag.String("backend", "", "path of git-http-backend (default: from `git --exec-path`)")
	push := flag.Bool("push", false, "accept pushes (git-http-backend refuses them from anonymous users otherwise)")
	quiet := flag.Bool("quiet", false, "do not log requests")
	flag.Parse()
	log.SetPrefix("gitserve: ")
	if err := run(*addr, *root, *backend, *push, *quiet); err != nil {
		log.Fatal(err)
	}
}

func run(addr, root, backend string, push, quiet bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr: %q is not a loopback IP: this server has no authentication", host)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return err
	}
	// testgit's HTTPS server runs the same handler behind authentication;
	// here the loopback-only address stands for it.
	cgiHandler, err := testgit.HTTPBackend(root, backend, push, nil)
	if err != nil {
		return err
	}
	handler := http.Handler(cgiHandler)
	if !quiet {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			log.Printf("%s %s", r.Method, r.URL)
			cgiHandler.ServeHTTP(w, r)
		})
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// The caller waits for this line: after it, connections are accepted.
	fmt.Printf("http://%s/\n", ln.Addr())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
