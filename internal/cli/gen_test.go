package cli

import "math/rand/v2"

// This file builds random command lines from the grammar for the differential test and the
// fuzz seeds. The words are chosen to sit on the edges the parser cares about (abbreviations,
// duplicate and odd options, argument counts around each command's bounds) and to be safe to
// hand to ovs-vsctl: no --retry, no database but the default (a socket that does not exist),
// no --log-file spelled out.

// globalWords may appear before the first command.
func globalWords() []string {
	return []string{
		"--no-wait", "--dry-run", "--oneline", "--no-syslog", "-t", "5", "-t0", "-t7", "--timeout=3",
		"--tim=x", "--no-heading", "--bare", "--pretty", "-f", "json", "-fcsv", "-ftable", "-d", "bare",
		"-djson", "-v", "-vdbg", "-vconsole:off", "-vbogus", "--verbose=vsctl", "--leader-only",
		"--no-leader-only", "--no-shuffle-remotes", "--max-column-width=10", "--may-exist",
		"--if-exists", "--id=@a", "--id", "@b", "--columns=name", "--real", "--fake", "--all",
		"--with-iface", "--fake-iface", "--bootstrap", "--inactivity-probe=5", "--may", "--if",
		"--fa", "--w", "--a", "--in", "--col", "--bogus", "--n", "--no", "--i", "-x", "-", "--",
		"--may-exist=1", "--oneline=1", "--syslog-method=null", "-p", "key.pem", "-Cca.pem",
		"--peer-ca-cert=p.pem", "-V", "-h", "--commands", "--options", "-vV", "-tV", "--tim",
		"--verbose=", "--ver", "--verb", "-hx", "--he", "--data", "--no-s", "--sh", "--dry",
	}
}

// localWords may appear before a command name.
func localWords() []string {
	return []string{
		"--may-exist", "--if-exists", "--id=@x", "--id=", "--id", "--columns=name", "--columns",
		"--real", "--fake", "--all", "--with-iface", "--fake-iface", "--bootstrap",
		"--inactivity-probe=5", "--inactivity-probe", "--may", "--if-exists=1", "--fake-iface=x",
		"-exist", "-if-exists", "-real,--fake", "-exists,--id=@y", "-exists,--id", "-x", "-", "-=1",
		"--=x", "--bogus", "--zzz", "--aaa", "--oneline", "--no-wait", "--May-Exist", "---all",
	}
}

// argWords are command arguments.
func argWords() []string {
	return []string{"br0", "p0", "Bridge", "Port", "Interface", "name", "x", "-y", "--z", "a=b", "@x", ".", ""}
}

// badNames are command names that do not exist.
func badNames() []string { return []string{"bogus", "SHOW", "lis", "", "@x", "add_br", "list-bridges"} }

// pick returns a random element of words.
func pick(r *rand.Rand, words []string) string { return words[r.IntN(len(words))] }

// randomLines returns n random command lines.
func randomLines(r *rand.Rand, n int) [][]string {
	specs := VSwitchCommands()
	lines := make([][]string, n)
	for i := range lines {
		var line []string
		for range r.IntN(4) {
			line = append(line, pick(r, globalWords()))
		}
		if r.IntN(3) == 0 {
			line = append(line, "--")
		}
		for k := range 1 + r.IntN(3) {
			if k > 0 {
				line = append(line, "--")
				if r.IntN(8) == 0 {
					line = append(line, "--")
				}
			}
			line = append(line, randomCommand(r, specs)...)
		}
		lines[i] = line
	}
	return lines
}

// randomCommand returns one command: options, name and arguments.
func randomCommand(r *rand.Rand, specs []CommandSpec) []string {
	var words []string
	spec := specs[r.IntN(len(specs))]
	for range r.IntN(3) {
		if len(spec.Options) > 0 && r.IntN(2) == 0 {
			o := pick(r, spec.Options)
			if o[len(o)-1] == '=' {
				o += "v"
			}
			words = append(words, o)
		} else {
			words = append(words, pick(r, localWords()))
		}
	}
	name := spec.Name
	if r.IntN(10) == 0 {
		name = pick(r, badNames())
	}
	words = append(words, name)
	n := spec.MinArgs + r.IntN(3) - 1
	if spec.MaxArgs != Unlimited && r.IntN(2) == 0 {
		n = spec.MaxArgs + r.IntN(2)
	}
	for range max(n, 0) {
		words = append(words, pick(r, argWords()))
	}
	return words
}
