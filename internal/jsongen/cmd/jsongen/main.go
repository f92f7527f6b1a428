// Command jsongen writes a package's JSON encoders (see internal/jsongen):
//
//	go run ./internal/jsongen/cmd/jsongen -dir plan -out json_gen.go Plan Expr
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/symbi-dev/symbi/internal/jsongen"
)

func main() {
	dir := flag.String("dir", ".", "the package's directory")
	out := flag.String("out", "json_gen.go", "the file to write, in -dir")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: jsongen [-dir DIR] [-out FILE] TYPE...")
		os.Exit(2)
	}
	command := fmt.Sprintf("go run ./internal/jsongen/cmd/jsongen -dir %s -out %s %s", filepath.ToSlash(*dir), *out, strings.Join(flag.Args(), " "))
	src, err := jsongen.Generate(*dir, flag.Args(), command)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(*dir, *out), src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
