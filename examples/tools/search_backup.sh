#!/bin/sh
# The backup search backend of examples/tools-resilience.hcl: a small local
# index that answers every query.
query=$(sed -n 's/.*"query" *: *"\([^"]*\)".*/\1/p')
printf 'backup index: results for "%s": sea otters eat sea urchins, crabs and clams; they live along the North Pacific coast.\n' "$query"
