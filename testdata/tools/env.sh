#!/bin/sh
# Prints the environment, one variable a line, to show the allow-list.
env | sort
