package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/symbi-dev/symbi/policy/opa"
	"github.com/symbi-dev/symbi/policy/opaproc"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "version", "--version":
			fmt.Println(opaproc.Version())
			return
		}
		fmt.Fprintf(os.Stderr, "%s is started by symbi and speaks to it over stdin and stdout; it takes no arguments (version prints its build)\n", opaproc.Binary)
		os.Exit(2)
	}
	// A Ctrl-C at the terminal reaches the whole process group: symbi
	// decides what it means (cancel the run, interrupt the REPL's
	// evaluation); the helper keeps serving until its stdin closes.
	signal.Ignore(os.Interrupt)
	if err := opaproc.Serve(context.Background(), os.Stdin, os.Stdout, opa.Engine{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
