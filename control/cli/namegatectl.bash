# bash completion for namegatectl(8): commands, their options, and VM names (those of the
# configuration given with -c, else the running daemon's, asked with namegatectl vms).

_namegatectl_vms()
{
	local ctl=${COMP_WORDS[0]} i
	local -a opts=()

	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-s | --socket | -c | --config)
			opts+=("${COMP_WORDS[i]}" "${COMP_WORDS[i + 1]}")
			;;
		esac
	done
	"$ctl" "${opts[@]}" vms 2>/dev/null
}

_namegatectl()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmds="status stats bindings flows events reload reopen check suggest grant grants revoke
	    pending approve deny vms fleet publish ha"
	local cmd="" i npos=0 opts

	COMPREPLY=()
	# the command: the first word that is neither an option nor an option's argument
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-s | --socket | -c | --config | -F | --fleet) ((i++)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		case $prev in
		-s | --socket | -c | --config | -F | --fleet)
			COMPREPLY=($(compgen -f -- "$cur"))
			return
			;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-s --socket -c --config -F --fleet -h --help -V --version" \
			    -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
		fi
		return
	fi
	case $prev in
	--vm)
		COMPREPLY=($(compgen -W "$(_namegatectl_vms)" -- "$cur"))
		return
		;;
	-e | --events | --flow-log | -c)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--reason | --name | --since | --last | --for | --host)
		return
		;;
	esac
	case $cmd in
	events) opts="--vm --reason --name --since --last -f --follow -e --events" ;;
	flows) opts="--vm --reason --name --since --last -f --follow --flow-log --json" ;;
	bindings) opts="--name --json" ;;
	check) opts="-c --json" ;;
	grant) opts="--for --reason --json" ;;
	approve) opts="--for --json" ;;
	pending) opts="-f --follow --json" ;;
	vms) opts="" ;;
	publish)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	ha) opts="--json --check --watch --timeout" ;;
	*) opts="--json" ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
		return
	fi
	# a VM as the first argument of the commands that take one
	for ((i = i + 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--vm | --reason | --name | --since | --last | --for | -e | --events | \
		    --flow-log | -c)
			((i++))
			;;
		-*) ;;
		*) ((npos++)) ;;
		esac
	done
	case $cmd in
	stats | bindings | flows | check | suggest | grant | grants | pending)
		if ((npos == 0)); then
			COMPREPLY=($(compgen -W "$(_namegatectl_vms)" -- "$cur"))
		fi
		;;
	esac
}
complete -F _namegatectl namegatectl
