/*
 * idxdscan: initialise DPDK's EAL, which scans and probes every bus (the idxd "dsa" bus
 * included), then report which DMA devices exist. It never configures or starts a device.
 *
 * Usage: idxdscan <EAL arguments> -- <dmadev name>...
 *
 * Output on stdout, one record per line:
 *   avail <rte_dma_count_avail()>
 *   dev <name> <dev_id or -1> <numa node or -1>     (one line per name asked for)
 *   id <dev_id> <name> <numa node>                  (one line per available dmadev)
 * Exit status 0 when the EAL initialised, 1 otherwise (its error on stderr).
 *
 * Built by dsa/dpdksmoke's test with the system compiler: cc idxdscan.c $(pkg-config --cflags
 * --libs libdpdk).
 */
/* rte_dma_* are experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rte_dmadev.h>
#include <rte_eal.h>
#include <rte_errno.h>

int main(int argc, char **argv)
{
	int used = rte_eal_init(argc, argv);
	if (used < 0) {
		fprintf(stderr, "idxdscan: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	/* rte_eal_init leaves the program name at argv[used], then the arguments after "--". */
	argc -= used + 1;
	argv += used + 1;
	if (argc > 0 && strcmp(argv[0], "--") == 0) {
		argc--;
		argv++;
	}

	printf("avail %u\n", (unsigned int)rte_dma_count_avail());
	for (int i = 0; i < argc && i < 64; i++) {
		int id = rte_dma_get_dev_id_by_name(argv[i]);
		int numa = -1;
		struct rte_dma_info info;
		if (id >= 0 && rte_dma_info_get((int16_t)id, &info) == 0)
			numa = info.numa_node;
		printf("dev %s %d %d\n", argv[i], id, numa);
	}
	int16_t id;
	RTE_DMA_FOREACH_DEV(id) {
		struct rte_dma_info info;
		if (rte_dma_info_get(id, &info) == 0)
			printf("id %d %s %d\n", id, info.dev_name, info.numa_node);
	}
	fflush(stdout);
	rte_eal_cleanup();
	return 0;
}
