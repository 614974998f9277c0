/*
 * Corpus replayer: the main() a fuzz target gets when libFuzzer is not linked in. It feeds
 * every file named on the command line (directories are walked one level deep) to
 * LLVMFuzzerTestOneInput, so a crash the fuzzer once found stays fixed in the normal run.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
replay_file(const char *path)
{
	FILE *f;
	uint8_t *buf = NULL;
	long size;
	int rc = -1;

	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out;
	/* An exact-size heap copy, so ASan sees any read one byte past the input. */
	if ((buf = malloc(size > 0 ? (size_t)size : 1)) == NULL)
		goto out;
	if (size > 0 && fread(buf, 1, (size_t)size, f) != (size_t)size)
		goto out;
	LLVMFuzzerTestOneInput(buf, (size_t)size);
	rc = 0;
out:
	if (rc != 0)
		fprintf(stderr, "replay: %s: cannot read\n", path);
	free(buf);
	fclose(f);
	return rc;
}

int
main(int argc, char **argv)
{
	unsigned int files = 0;
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			failed |= replay_file(argv[i]) != 0;
			files++;
			continue;
		}
		if ((d = opendir(argv[i])) == NULL)
			return 1;
		while ((e = readdir(d)) != NULL) {
			char path[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			failed |= replay_file(path) != 0;
			files++;
		}
		closedir(d);
	}
	if (files == 0) {
		fprintf(stderr, "replay: no corpus files: a replay that runs nothing proves nothing\n");
		return 1;
	}
	printf("replay: %u inputs ran clean\n", files);
	return failed;
}
