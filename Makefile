# ovsplane — build, test and tooling entry points. Tool versions are pinned here.
SHELL           := /bin/bash
# The Go toolchain, fetched by the go command from the module proxy (go.mod says go 1.27.3; a
# machine's own Go ignores that line unless GOTOOLCHAIN names the version).
export GOTOOLCHAIN := go1.27.3
GO              ?= go
STATICCHECK     := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# vulncheck: govulncheck and the vulnerability database module it reads offline (bump
# VULNDB_VERSION to take newer advisories; scripts/vulncheck.sh builds the database from it)
GOVULNCHECK_VERSION := v1.9.0
VULNDB_VERSION      := v0.0.0-20261105234957-e22db6528018
GOTEST_FLAGS    ?= -race -count=1 -timeout 25m
PKGS            ?= ./...
BIN             := bin
SCHEMA          := ovsdb/vswitch/schema/vswitch.ovsschema
FABRIC_SCHEMA   := overlay/fabric/schema/fabric.ovsschema
IS_ROOT         := $(shell [ "$$(id -u)" = 0 ] && echo 1)

.PHONY: all build test unit generate check-generated proto lint bench run clean

all: build lint test

## build: compile every package and the binaries into bin/ (vsctl static: without cgo's
## dynamic loader it starts ~3 ms sooner, which matters for a command run once per change)
build:
	$(GO) build ./...
	$(GO) build -o $(BIN)/ ./cmd/...
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/vsctl

## plugins: build the plugin binaries into bin/plugins/ — the reference plugin,
## ovsplane-plugin-veth (examples/veth-reference), ovsplane-plugin-vdpa (plugins/vdpa),
## ovsplane-plugin-dsa (plugins/dsa), ovsplane-plugin-stripe (plugins/stripe) and ovsplane-plugin-overlay
## (plugins/overlay) — static and reproducible
## (same source, same SHA-256), and print the sha256 pins for the daemon's plugins: allow-list
.PHONY: plugins
plugins:
	@mkdir -p $(BIN)/plugins
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -o $(BIN)/plugins/ovsplane-plugin-veth ./examples/veth-reference
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -o $(BIN)/plugins/ovsplane-plugin-vdpa ./plugins/vdpa
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -o $(BIN)/plugins/ovsplane-plugin-dsa ./plugins/dsa
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -o $(BIN)/plugins/ovsplane-plugin-stripe ./plugins/stripe
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -o $(BIN)/plugins/ovsplane-plugin-overlay ./plugins/overlay
	CGO_ENABLED=1 $(GO) build -trimpath -buildvcs=false -o $(BIN)/plugins/ovsplane-plugin-flowmon ./plugins/flowmon # DuckDB needs cgo
	@cd $(BIN)/plugins && sha256sum ovsplane-plugin-veth ovsplane-plugin-vdpa ovsplane-plugin-dsa ovsplane-plugin-stripe ovsplane-plugin-overlay ovsplane-plugin-flowmon

## test: prepare the lab (as root: Debian packages, hugepages) and run every test with -race.
## As root the integration tests must run (OVSPLANE_REQUIRE_LAB=1 turns a missing lab into a
## failure); otherwise they are skipped and the summary says why.
test:
	@scripts/lab-setup.sh
	@set -o pipefail; \
	  $(if $(IS_ROOT),OVSPLANE_REQUIRE_LAB=1,) $(GO) test $(GOTEST_FLAGS) -json $(PKGS) | scripts/test-summary.py

## unit: only the fast tests that need no root and no OVS installation
unit:
	$(GO) test $(GOTEST_FLAGS) ./ovsdb/...

## generate: regenerate the OVSDB models from the pinned schema
generate:
	$(GO) generate ./ovsdb/vswitch/ ./overlay/fabric/model/

## proto: regenerate the API's Go code (api/gen) from api/proto and the plugin contract's
## (plugins/api/gen) from plugins/api/proto with Debian's protoc and the protoc-gen-go /
## protoc-gen-connect-go / protoc-gen-go-grpc versions pinned as tools in go.mod
proto:
	scripts/gen-proto.sh api/gen
	scripts/gen-proto.sh --plugins plugins/api/gen

## check-generated: fail if the committed models differ from what the generator produces
check-generated:
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	  $(GO) tool modelgen -extended -p vswitch -o $$tmp $(SCHEMA) && \
	  for f in $$tmp/*.go; do \
	    diff -u ovsdb/vswitch/$$(basename $$f) $$f || { echo "check-generated: $$(basename $$f) is stale; run 'make generate'"; exit 1; }; \
	  done; \
	  extra=$$(cd ovsdb/vswitch && ls *.go | grep -v '^doc.go$$' | while read f; do [ -e $$tmp/$$f ] || echo $$f; done); \
	  [ -z "$$extra" ] || { echo "check-generated: not produced by the generator: $$extra"; exit 1; }; \
	  echo "check-generated: models match $(SCHEMA) (schema $$(python3 -c 'import json;print(json.load(open("$(SCHEMA)"))["version"])'))"
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	  $(GO) tool modelgen -extended -p model -o $$tmp $(FABRIC_SCHEMA) && \
	  for f in $$tmp/*.go; do \
	    diff -u overlay/fabric/model/$$(basename $$f) $$f || { echo "check-generated: fabric $$(basename $$f) is stale; run 'make generate'"; exit 1; }; \
	  done; \
	  extra=$$(cd overlay/fabric/model && ls *.go | grep -v '^doc.go$$' | while read f; do [ -e $$tmp/$$f ] || echo $$f; done); \
	  [ -z "$$extra" ] || { echo "check-generated: not produced by the generator: $$extra"; exit 1; }; \
	  echo "check-generated: models match $(FABRIC_SCHEMA)"

## lint: gofmt, go vet, staticcheck (pinned), go mod tidy
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff

## vulncheck: govulncheck (pinned) on every package against an offline database built from the
## pinned golang.org/x/vulndb module; fails on any reachable advisory
.PHONY: vulncheck
vulncheck:
	GO=$(GO) GOVULNCHECK_VERSION=$(GOVULNCHECK_VERSION) VULNDB_VERSION=$(VULNDB_VERSION) scripts/vulncheck.sh

## fuzz: run every Go fuzz target (each func FuzzXxx in a *_test.go, found by scripts/fuzz.sh)
## for FUZZTIME each (default 5m), without -race; a crash fails the run and prints the file the
## fuzzer wrote (PKG/testdata/fuzz/FuzzXxx/HASH). FUZZ_TARGETS=REGEXP picks targets.
## fuzz-short: the same for 10s per target, as CI runs it
.PHONY: fuzz fuzz-short
fuzz:
	GO=$(GO) FUZZTIME=$(or $(FUZZTIME),5m) scripts/fuzz.sh
fuzz-short:
	GO=$(GO) FUZZTIME=10s scripts/fuzz.sh

## bench: side-by-side benchmarks against ovs-vsctl (as root; needs the lab)
bench:
	@scripts/lab-setup.sh
	set -o pipefail; $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./bench/ | tee bench.out

## bench-churn: issue 20's P1 port churn matrix (as root; needs the lab and python3-ovsdbapp):
## 2,000 ports / 50 clients and 5,000 / 100, quiet and with a CPU hog on one core; the floor,
## ovsplaned (pipelined, and at --batch-depth 1), half the ports through the noop plugin,
## ovsdbapp (bounded by OVSPLANE_P1_OVSDBAPP_TIMEOUT per phase when set; unset: unbounded) and
## per-port ovs-vsctl (bounded by OVSPLANE_P1_VSCTL_TIMEOUT per phase, default 5m): a bounded arm
## that does not finish shows how far it got, and ovsdbapp's ratios become lower bounds ("> x");
## rewrites docs/benchmarks.md's "Port churn P1" tables. About an hour on 2 vCPUs. P1_BENCH, the
## -bench pattern, selects part of the matrix, e.g. P1_BENCH='BenchmarkChurnP1/.*/.*/^(floor|ovsplaned)$$'.
## OVSPLANE_P1_REPEAT=N (1-9) runs floor and ovsplaned N times alternating per size and condition
## and reports the median of their ratios.
.PHONY: bench-churn
bench-churn:
	@scripts/lab-setup.sh
	set -o pipefail; OVSPLANE_CHURN_DOC=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench '$(P1_BENCH)' -benchtime 1x -timeout 4h -v ./bench/ | tee bench-churn.out
P1_BENCH ?= BenchmarkChurnP1

## bench-vsctl: BenchmarkVsctl and BenchmarkVsctlWait (vsctl against ovs-vsctl, as root; needs
## the lab), then rewrite docs/benchmarks.md's vsctl tables from their output (bench-vsctl.out)
.PHONY: bench-vsctl
bench-vsctl:
	@scripts/lab-setup.sh
	set -o pipefail; $(GO) test -run '^$$' -bench 'BenchmarkVsctl' -benchtime 1x -timeout 90m ./bench/ | tee bench-vsctl.out
	scripts/bench-vsctl-table.py bench-vsctl.out docs/benchmarks.md

## bench-stripe: the stripe testbed's full matrix of the alternatives (issue 16; as root, needs
## the lab): links alone, best single link, MPTCP 4 subflows (cubic, bbr, reno), stripe weighted, seed and
## round-robin through tun devices (kernel-NIC mode), stripe weighted in OVS-DPDK link mode (lanes
## paced at 0.95 and 0.3 x the link rates; needs DPDK), OVS bonds
## balance-slb and balance-tcp with LACP; rewrites the generated table of docs/benchmarks.md's
## "stripe testbed: alternatives"
.PHONY: bench-stripe
bench-stripe:
	@scripts/lab-setup.sh
	STRIPEBED_DOC=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench 'BenchmarkAlternatives' -benchtime 1x -timeout 20m -v ./test/lab/stripebed/

## bench-stripe-apps: five applications through the stripe engines and endpoints (issue 16; as
## root): per-application Mbit/s and Jain's index, Vmax at and at a quarter of the link rates
.PHONY: bench-stripe-apps
bench-stripe-apps:
	@scripts/lab-setup.sh
	$(GO) test -run '^$$' -bench 'BenchmarkStripeApps' -benchtime 1x -timeout 10m -v ./test/lab/stripebed/

## bench-overlay: the overlay testbed (issue 17; as root, needs the lab): six sites in netns, each its
## own userspace OVS, underlay through udprelay (5 ms / 130 ms); a1<->b1 direct vs through the super
## node: ping RTT and iperf3 TCP both ways; rewrites docs/benchmarks.md's "overlay testbed" table. ~2 min.
.PHONY: bench-overlay
bench-overlay:
	@scripts/lab-setup.sh
	OVERLAYBED_DOC=$(CURDIR)/docs/benchmarks.md $(GO) test -run '^$$' -bench 'BenchmarkOverlayBed' -benchtime 1x -timeout 20m -v ./test/lab/overlaybed/

## bench-flowgen: flowmon's generator through a real OVS-DPDK bridge with NetFlow v5 export
## (issue 18; as root, needs the lab and DPDK): 64/512/1448 B frames, per flow generated vs
## received vs exported packets and octets, pps achieved, loss located along the path, CPU s per
## Gbit; FLOWBED_FLOWS (64), FLOWBED_FRAMES (200000) and FLOWBED_PPS (0: unpaced) tune it. ~30 s.
.PHONY: bench-flowgen
bench-flowgen:
	@scripts/lab-setup.sh
	set -o pipefail; $(GO) test -run '^$$' -bench 'BenchmarkFlowgen' -benchtime 1x -timeout 10m -v ./test/lab/flowbed/ | tee bench-flowgen.out

## bench-stripe-ovs: what the stripe's OVS-DPDK link mode costs next to the kernel-NIC mode on
## the stripe testbed (issue 16; as root, needs the lab and DPDK): TCP % of the summed link rates,
## UDP delivery, CPU seconds per Gbit (process and ovs-vswitchd); STRIPEBED_OVS_POLICIES picks
## the policies (default weighted), STRIPEBED_OVS_MODES the modes (kernel,ovs-dpdk,ovs-dpdk-veth,ovs-dpdk-veth-adapt),
## STRIPEBED_OVS_PACE the lanes' pace factor (default 0.95), STRIPEBED_OVS_SECONDS each arm's length (10). Prints the numbers; docs/stripe-plugin.md quotes a run.
.PHONY: bench-stripe-ovs
bench-stripe-ovs:
	@scripts/lab-setup.sh
	$(GO) test -run '^$$' -bench 'BenchmarkStripeOVSDPDK' -benchtime 1x -timeout 20m -v ./test/lab/stripebed/

## bench-overlay-route: the overlay routing core (issue 17) at 1k/2k/10k/100k nodes, incremental
## link changes, side by side with gonum's DijkstraAllPaths (1k, 2k) and a plain two-phase
## all-pairs (1k..10k), each arm in its own process (peak RSS); no root, no lab. ~5 min.
## OVERLAY_ROUTE_ARMS=route,incr runs only those arms.
.PHONY: bench-overlay-route
bench-overlay-route:
	set -o pipefail; $(GO) test -run '^$$' -bench BenchmarkOverlayRoute -benchtime 1x -timeout 60m ./bench/overlayroute/ | tee bench-overlay-route.out

## bench-scale: BenchmarkDaemonScale at 10,000 API ports (issue 20; as root, needs the lab): real
## ovsdb-server + ovs-vswitchd, the daemon without GOMEMLIMIT. Reports the resync after a
## restart, one extra port's commit p50 (ovs-vswitchd's ack apart), RSS, live heap, ListPorts p50,
## and FAILS when a figure misses its goal by more than its noise margin (bench/scale_test.go).
## The heap profile at rest is saved in bench-scale-prof/. bench-scale-20k: the same at 20,000
## with 3 extra ports instead of 21 and ovsdb.apply_timeout 10m: there ovs-vswitchd takes one to
## two minutes per reconfiguration on the dummy datapath, the default apply timeout's 2 minutes.
.PHONY: bench-scale bench-scale-20k
bench-scale:
	@scripts/lab-setup.sh
	mkdir -p bench-scale-prof
	set -o pipefail; env -u GOMEMLIMIT OVSPLANE_SCALE_PORTS=10000 OVSPLANE_SCALE_PROFILE=$(CURDIR)/bench-scale-prof \
	  $(GO) test -run '^$$' -bench BenchmarkDaemonScale -benchtime 1x -timeout 60m -v ./bench/ | tee bench-scale.out
bench-scale-20k:
	@scripts/lab-setup.sh
	mkdir -p bench-scale-prof
	set -o pipefail; env -u GOMEMLIMIT OVSPLANE_SCALE_PORTS=20000 OVSPLANE_SCALE_EXTRA=3 OVSPLANE_SCALE_APPLY_TIMEOUT=10m OVSPLANE_SCALE_PROFILE=$(CURDIR)/bench-scale-prof \
	  $(GO) test -run '^$$' -bench BenchmarkDaemonScale -benchtime 1x -timeout 120m -v ./bench/ | tee bench-scale-20k.out

## bench-flowstore: the flow stores side by side (issue 18): Append rows/s and CPU-µs per row
## (client and PostgreSQL server) in 10k-record batches, and a top-N and a 24 h series, for DuckDB,
## PostgreSQL 15 (pgstore's binary COPY and pgx's CopyFromSource) and SQLite (modernc, test code
## only); needs cgo and postgresql-15. FLOWSTORE_ROWS sets the rows per store (default 1,000,000).
.PHONY: bench-flowstore
bench-flowstore:
	set -o pipefail; CGO_ENABLED=1 $(GO) test -run '^$$' -bench BenchmarkStores -benchtime 1x -timeout 30m ./bench/flowstore/ | tee bench-flowstore.out

## bench-overlay-tunnels: the overlay's tunnels side by side on one two-netns bed over one veth
## (issue 17; as root, needs the lab): OVS vxlan and geneve (userspace datapath, br-phy/br-int),
## the EthUDP engine plain and LZ4 through a tap port of br-int, WireGuard in userspace, EthUDP
## inside WireGuard. iperf3 TCP throughput and CPU seconds per Gbit (ovs-vswitchd, the in-process
## engine, iperf3); prints a markdown table (bench-overlay-tunnels.out) for docs/benchmarks.md.
## OVERLAY_TUNNELS_BYTES sets the bytes per arm (default 512 MiB).
.PHONY: bench-overlay-tunnels
bench-overlay-tunnels:
	@scripts/lab-setup.sh
	set -o pipefail; OVSPLANE_REQUIRE_LAB=1 $(GO) test -run '^$$' -bench BenchmarkOverlayTunnels -benchtime 1x -timeout 30m -v ./bench/overlaytunnels/ | tee bench-overlay-tunnels.out

## bench-overlay-converge: fabric convergence (issue 17): 10,000 simulated agents against the
## 3-member clustered ovsdb-server, direct and through 3 OVSDB relays, batched and one
## transaction per agent; prints the table for docs/benchmarks.md (OVERLAY_CONVERGE_ARMS overrides)
.PHONY: bench-overlay-converge
bench-overlay-converge:
	set -o pipefail; OVSPLANE_REQUIRE_LAB=1 $(GO) test -run '^$$' -bench BenchmarkOverlayConverge -benchtime 1x -timeout 90m ./bench/overlayconverge/ | tee bench-overlay-converge.out

## bench-flowingest: flowmon ingest end to end (issue 18): NetFlow v5 (30 records a datagram)
## over loopback into the collector and each store (discard, DuckDB, a private PostgreSQL: as
## root), flat out and at 80 % of that, with goflow2's decode rate as the anchor; loss counted
.PHONY: bench-flowingest
bench-flowingest:
	set -o pipefail; $(GO) test -run '^$$' -bench BenchmarkFlowIngest -benchtime 1x -timeout 20m -v ./bench/flowingest/ | tee bench-flowingest.out

## ethudp-interop: our overlay/ethudp Link against the reference C EthUDP (commit c45a8c2), every
## mode in both directions, as root. Needs network access to clone github.com/bg6cq/ethudp (it has
## no licence, so it is not vendored) and gcc liblz4-dev libssl-dev libpcap-dev; not part of CI.
.PHONY: ethudp-interop
ethudp-interop:
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	  git clone -q https://github.com/bg6cq/ethudp $$tmp/ethudp && git -C $$tmp/ethudp checkout -q c45a8c2 && \
	  gcc -O2 -D_GNU_SOURCE -DVERSION='"c45a8c2"' -o $$tmp/EthUDP $$tmp/ethudp/EthUDP.c -lpthread -lssl -llz4 -lcrypto -lpcap && \
	  OVSPLANE_REQUIRE_LAB=1 ETHUDP_BIN=$$tmp/EthUDP $(GO) test -count=1 -tags ethudp_interop -run Interop -v ./overlay/ethudp/

## dsa-kit: the DSA vhost offload measurement (issue 15) on a host with DSA hardware, as root:
## 64..9000 B x {PVP, VM-to-VM same node} x DSA off/on, driven by $$DSA_KIT_CONFIG (JSON; see
## docs/dsa.md "Hardware measurement kit" and bench/dsakit/testdata/kit.json), report in dsa-kit.md
## (docs/benchmarks.md's table format). dsa-kit-dryrun: the same plan printed, parsed and rendered
## from recorded outputs (bench/dsakit/testdata/samples); runs nothing, needs nothing.
.PHONY: dsa-kit dsa-kit-dryrun
dsa-kit:
	@[ -n "$(DSA_KIT_CONFIG)" ] || { echo "usage: make dsa-kit DSA_KIT_CONFIG=<kit.json> (see docs/dsa.md)"; exit 2; }
	$(GO) run ./bench/dsakit --config "$(DSA_KIT_CONFIG)" --out dsa-kit.md
dsa-kit-dryrun:
	$(GO) run ./bench/dsakit --dry-run --samples bench/dsakit/testdata/samples --config bench/dsakit/testdata/kit.json

## run: start ovsplaned with $$CONFIG (default examples/quickstart.yaml), its state in
## $$OVSPLANE_RUN_DIR (default /tmp/ovsplane-run); Ctrl-C stops it. As root with Open vSwitch
## installed (ovsdb-server and ovs-vswitchd in $$PATH): --sandbox, a private real ovsdb-server +
## ovs-vswitchd (DPDK when hugepages are free; vswitchd in its own network namespace;
## vswitchd/sandbox) that forwards packets. Otherwise: --embedded, as `make run-embedded`.
CONFIG ?= examples/quickstart.yaml
run:
	@dir=$${OVSPLANE_RUN_DIR:-/tmp/ovsplane-run}; \
	  if [ "$$(id -u)" = 0 ] && command -v ovsdb-server >/dev/null && command -v ovs-vswitchd >/dev/null; then \
	    mode=--sandbox; else mode=--embedded; fi; \
	  echo "make run: ovsplaned --config $(CONFIG) $$mode --data-dir $$dir"; \
	  exec env -u OVSPLANE_RUN_DIR $(GO) run ./cmd/ovsplaned --config "$(CONFIG)" $$mode --data-dir "$$dir"

## plugin-dev: the development loop of a plugin, no tracked file edited: builds the plugin whose
## main package is $$PLUGIN (here, or a module of its own that replaces github.com/ovsplane/ovsplane
## with this checkout), installs it with its pin in $$OVSPLANE_RUN_DIR/plugins (default
## /tmp/ovsplane-plugin-dev), writes $$OVSPLANE_RUN_DIR/ovsplaned.yaml naming it and a bridge br0
## (with a port dev0 of type $$TYPE when set) and runs ovsplaned on it as `make run` does.
## Example: make plugin-dev PLUGIN=examples/plugin-sample TYPE=sample
.PHONY: plugin-dev
plugin-dev:
	@[ -n "$(PLUGIN)" ] || { echo "usage: make plugin-dev PLUGIN=<dir of the plugin's main package> [TYPE=<port type>]"; exit 2; }
	@dir=$${OVSPLANE_RUN_DIR:-/tmp/ovsplane-plugin-dev}; \
	  cfg=$$(GO="$(GO)" scripts/plugin-dev.sh "$(PLUGIN)" "$$dir" "$(TYPE)") && \
	  exec $(MAKE) --no-print-directory run CONFIG="$$cfg" OVSPLANE_RUN_DIR="$$dir"

## run-embedded: ovsplaned on its embedded OVSDB (persisted in $$OVSPLANE_RUN_DIR) with a
## simulated ovs-vswitchd: no root, no OVS, and no packets flow. (OVSPLANE_RUN_DIR is make's, not
## a daemon setting: the daemon rejects unknown OVSPLANE_ variables, so it is not passed on.)
.PHONY: run-embedded
run-embedded:
	env -u OVSPLANE_RUN_DIR $(GO) run ./cmd/ovsplaned --config examples/quickstart.yaml --embedded --data-dir $${OVSPLANE_RUN_DIR:-/tmp/ovsplane-run}

## install: install what `make build plugins` built in $(BIN) under $(DESTDIR)$(PREFIX): the
## programs in bin/, the plugins in lib/ovsplane/plugins/ (name them in the daemon's plugins:
## list with their pins), man pages in share/man/man8/, bash completion, and the systemd unit
## in $(SYSTEMDUNITDIR) with its ExecStart pointing at $(PREFIX)/bin. A program or plugin not
## built is an error naming the make target that builds it.
PREFIX          ?= /usr/local
SYSTEMDUNITDIR  ?= $(PREFIX)/lib/systemd/system
MANPAGES        := $(wildcard contrib/man/*.8)
.PHONY: install install-bin install-man install-contrib
install: install-bin install-man install-contrib
install-bin:
	@for f in $(BIN)/ovsplaned $(BIN)/vsctl; do [ -x "$$f" ] || { echo "make install: $$f is missing: run make build first" >&2; exit 1; }; done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/ovsplane/plugins
	install -m 0755 $(BIN)/ovsplaned $(BIN)/vsctl $(DESTDIR)$(PREFIX)/bin/
	@for p in $(patsubst contrib/man/%.8,%,$(filter contrib/man/ovsplane-plugin-%,$(MANPAGES))); do \
	  [ -x "$(BIN)/plugins/$$p" ] || { echo "make install: $(BIN)/plugins/$$p is missing: run make plugins first" >&2; exit 1; }; \
	  echo "install -m 0755 $(BIN)/plugins/$$p $(DESTDIR)$(PREFIX)/lib/ovsplane/plugins/"; \
	  install -m 0755 "$(BIN)/plugins/$$p" $(DESTDIR)$(PREFIX)/lib/ovsplane/plugins/ || exit 1; \
	done
install-man:
	install -d $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0644 $(MANPAGES) $(DESTDIR)$(PREFIX)/share/man/man8/
install-contrib:
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(SYSTEMDUNITDIR)
	install -m 0644 contrib/bash-completion/vsctl contrib/bash-completion/ovsplaned $(DESTDIR)$(PREFIX)/share/bash-completion/completions/
	sed 's|/usr/local/bin/|$(PREFIX)/bin/|g' contrib/systemd/ovsplaned.service > $(DESTDIR)$(SYSTEMDUNITDIR)/ovsplaned.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/ovsplaned.service

clean:
	rm -rf $(BIN)
