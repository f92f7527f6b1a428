# Argument allow-lists for the shell tool: the command's first word must be
# on data.commands.allowed, git only with read-only subcommands, and no shell
# metacharacters (the tool runs without a shell, but the command text may be
# handed to one downstream).
package symbi.gate

shell_words := split(trim_space(input.action.arguments.cmd), " ")

git_subcommand := s if {
	s := shell_words[1]
} else := ""

denials contains {"decision": "deny", "reason": sprintf("shell: %q contains a shell metacharacter (one of ; | & ` $ > <)", [input.action.arguments.cmd])} if {
	input.action.tool == "shell"
	regex.match("[;|&`$><]", input.action.arguments.cmd)
}

denials contains {"decision": "deny", "reason": sprintf("shell: %q is not on the allow-list %v", [shell_words[0], data.commands.allowed])} if {
	input.action.tool == "shell"
	not shell_words[0] in data.commands.allowed
}

denials contains {"decision": "deny", "reason": sprintf("shell: git %s is not allowed; read-only subcommands only: %v", [git_subcommand, data.commands.git_subcommands])} if {
	input.action.tool == "shell"
	shell_words[0] == "git"
	not git_subcommand in data.commands.git_subcommands
}

allowances contains {"decision": "allow", "reason": sprintf("shell: %s is on the allow-list", [shell_words[0]])} if {
	input.action.tool == "shell"
	shell_words[0] in data.commands.allowed
}
