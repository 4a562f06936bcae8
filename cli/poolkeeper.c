/*
 * poolkeeper.c - the `poolkeeper` command: poolkeeper's rules over files.
 *
 *   poolkeeper lint [flags] FILE|DIR|- ...
 *
 * Exit status: 0 clean (warnings allowed unless --fail-on=warning);
 * 1 findings that fail; 2 a usage error, a file that could not be read or
 * whose YAML/JSON did not load.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "conformance.h"
#include "convert.h"
#include "flags.h"
#include "inputs.h"
#include "lint.h"
#include "manifest.h"
#include "report.h"
#include "rules.h"
#include "usage.h"

#ifndef PK_VERSION
#define PK_VERSION "dev"
#endif

#define EXIT_USAGE 2

enum lint_flag {
	F_OUTPUT,
	F_FAIL_ON,
	F_STRICT,
	F_NO_RECURSIVE,
	F_RECURSIVE,
	F_FOLLOW_SYMLINKS,
	F_MAX_FILE_SIZE,
	F_JOBS,
	F_VERBOSE,
	F_QUIET,
	F_CLAIMS,
	F_FOREIGN,
	F_HELP,
	F_COUNT
};

static const struct pk_flag lint_flags[F_COUNT] = {
    [F_OUTPUT] = {"output", 'o', PK_FLAG_CHOICE, "text", "text|json|github|junit|sarif",
                  "report as text lines (file:line:col: severity: ...), one JSON object, "
                  "GitHub workflow commands, JUnit XML or SARIF 2.1.0"},
    [F_FAIL_ON] = {"fail-on", 0, PK_FLAG_CHOICE, "error", "warning|error",
                   "the least severe finding that makes the exit status 1"},
    [F_STRICT] = {"strict", 0, PK_FLAG_BOOL, NULL, NULL,
                  "accepted for kubeconform's flag: unknown fields (metadata's too) and "
                  "duplicate keys always fail, as the API server's strict field "
                  "validation refuses them"},
    [F_NO_RECURSIVE] = {"no-recursive", 0, PK_FLAG_BOOL, NULL, NULL,
                        "do not descend into subdirectories of DIR arguments"},
    [F_RECURSIVE] = {"recursive", 'R', PK_FLAG_BOOL, NULL, NULL,
                     "descend into subdirectories (the default; kept for kubectl's -R)"},
    [F_FOLLOW_SYMLINKS] = {"follow-symlinks", 0, PK_FLAG_BOOL, NULL, NULL,
                           "follow symbolic links that lead out of a DIR argument's tree "
                           "(by default such a link is reported and not read)"},
    [F_MAX_FILE_SIZE] = {"max-file-size", 0, PK_FLAG_UINT, "8388608", "1..17179869184",
                         "refuse files (and standard input) over this many bytes"},
    [F_JOBS] = {"jobs", 'j', PK_FLAG_UINT, "0", "0..64",
                "files read and checked at once; 0: one per online CPU"},
    [F_VERBOSE] = {"verbose", 'v', PK_FLAG_COUNT, NULL, NULL,
                   "also list objects without errors, skipped objects and directories "
                   "without manifests"},
    [F_QUIET] = {"quiet", 'q', PK_FLAG_BOOL, NULL, NULL,
                 "list only findings (the default; overrides --verbose)"},
    [F_CLAIMS] = {"claim-enforcement", 0, PK_FLAG_CHOICE, "repair", "repair|deny|warn",
                  "claims on poolkeeper pools, as the webhook's flag of the same name: "
                  "repair checks them as completed on admission"},
    [F_FOREIGN] = {"foreign-claims", 0, PK_FLAG_CHOICE, "warn", "ignore|warn|deny",
                   "claims on other providers' pools, as the webhook's flag"},
    [F_HELP] = PK_FLAG_DEF_HELP,
};

static const char lint_usage[] = "poolkeeper lint [flags] FILE|DIR|- ...";
static const char lint_summary[] =
    "Checks Kubernetes manifests (YAML or JSON, several documents per file, kind: List)\n"
    "with the rules poolkeeper's webhook enforces: poolkeeper's pools (" PK_POOL_GROUP ")\n"
    "against the pool rules and each other for overlaps,\n" PK_CLAIM_KIND " and " PK_ADDRESS_KIND
    " (" PK_CAPI_IPAM_GROUP " " PK_CAPI_V1BETA2 ", " PK_CAPI_V1BETA1 ", " PK_CAPI_V1ALPHA1 ")\n"
    "against the CAPI IPAM contract and the files' pools and claims, under the webhook's\n"
    "claim modes. Fields the CRDs (and ObjectMeta) do not define are errors, with a\n"
    "suggestion; so are apiVersions and kinds close to these, and versions and kinds the\n"
    "two groups do not serve. Other kinds are counted as skipped. A DIR contributes its\n"
    "*.yaml, *.yml and *.json files, subdirectories included; - reads standard input.\n"
    "\n"
    "Exit status: 0 clean, 1 findings that fail (errors, or warnings with\n"
    "--fail-on=warning), 2 usage error, or a file that could not be read or loaded.";

static void print_main_help(FILE *f)
{
	fprintf(f, "Usage: poolkeeper COMMAND [flags] [args]\n"
	           "\n"
	           "poolkeeper is a Cluster API IPAM provider; this tool applies its rules\n"
	           "to manifests in files and checks IPAM providers in live clusters.\n"
	           "\n"
	           "Commands:\n"
	           "  lint         check pools, IPAddressClaims and IPAddresses in files\n"
	           "  conformance  run the Cluster API IPAM contract against a pool's provider\n"
	           "  audit        lint's checks and the live ones on a cluster's IPAM objects\n"
	           "  usage        each pool's total, used and free addresses, and top consumers\n"
	           "  convert      turn the in-cluster provider's pools into poolkeeper pools\n"
	           "\n"
	           "Flags:\n"
	           "  -h, --help     show this help (poolkeeper COMMAND --help for a command)\n"
	           "      --version  print the version\n");
}

/* Entries a directory walk could not use: reported, and the run goes on. */
static int lint_bad_entries(struct pk_lint *l, const struct pk_inputs *in, size_t from)
{
	int rc = PK_OK;
	for (size_t i = from; i < in->n_bad && rc == PK_OK; i++) {
		fprintf(stderr, "poolkeeper lint: %s\n", in->bad[i].message);
		rc = pk_lint_add_unreadable(l, in->bad[i].path, in->bad[i].message);
	}
	return rc;
}

/* Reads every input the arguments name into the lint, then runs it. */
static int lint_inputs(struct pk_lint *l, const char **pos, size_t npos, unsigned flags,
                       bool verbose, unsigned jobs)
{
	struct pk_inputs in = {0};
	struct pk_err err = {{0}};
	int rc = PK_OK;
	for (size_t i = 0; i < npos && rc == PK_OK; i++) {
		size_t found = 0, bad = in.n_bad;
		int arc = pk_inputs_add(&in, pos[i], flags, &found, &err);
		rc = lint_bad_entries(l, &in, bad);
		if (rc != PK_OK || arc == PK_ERR_NOMEM) {
			rc = PK_ERR_NOMEM;
		} else if (arc != PK_OK) {
			fprintf(stderr, "poolkeeper lint: %s\n", err.msg);
			rc = pk_lint_add_unreadable(l, pos[i], err.msg);
		} else if (found == 0 && verbose) {
			fprintf(stderr, "poolkeeper lint: %s: no *.yaml, *.yml or *.json files\n",
			        pos[i]);
		}
	}
	size_t before;
	pk_lint_problems(l, &before);
	if (rc == PK_OK)
		rc = pk_lint_add_files(l, in.paths, in.n, jobs);
	size_t np;
	const struct pk_lint_problem *p = pk_lint_problems(l, &np);
	for (size_t i = before; i < np; i++)
		if (p[i].unreadable)
			fprintf(stderr, "poolkeeper lint: %s\n", p[i].message);
	pk_inputs_free(&in);
	return rc != PK_OK ? rc : pk_lint_run(l);
}

/* --claim-enforcement and --foreign-claims; false (after a message) for a value not taken. */
static bool lint_modes(const struct pk_flag_value *vals, enum pk_enforcement *claims,
                       enum pk_enforcement *foreign)
{
	if (pk_rules_parse_enforcement(pk_flags_get_string(lint_flags, vals, F_CLAIMS), claims) ==
	        PK_OK &&
	    pk_rules_parse_enforcement(pk_flags_get_string(lint_flags, vals, F_FOREIGN), foreign) ==
	        PK_OK)
		return true;
	fprintf(stderr, "poolkeeper lint: --claim-enforcement or --foreign-claims has a value "
	                "it does not take\n");
	return false;
}

static int write_report(const struct pk_lint *l, const char *output, bool verbose, bool fail_warn)
{
	const struct pk_report_ci c = {.command = "lint", .fail_on_warning = fail_warn};
	if (!strcmp(output, "json"))
		return pk_report_write_json(stdout, l, fail_warn);
	if (strcmp(output, "text") != 0)
		return pk_report_ci_write(stdout, output, l, &c);
	pk_report_write_text(stdout, l, verbose, fail_warn);
	return PK_OK;
}

/* Lints what the flags and arguments name and prints the report; the exit status. */
static int lint_and_report(const struct pk_flag_value *vals, const char **pos, size_t npos)
{
	const char *output = pk_flags_get_string(lint_flags, vals, F_OUTPUT);
	bool fail_warn = !strcmp(pk_flags_get_string(lint_flags, vals, F_FAIL_ON), "warning");
	bool verbose = vals[F_VERBOSE].count > 0 && !pk_flags_get_bool(vals, F_QUIET);
	unsigned flags =
	    (pk_flags_get_bool(vals, F_NO_RECURSIVE) ? 0 : PK_INPUTS_RECURSIVE) |
	    (pk_flags_get_bool(vals, F_FOLLOW_SYMLINKS) ? PK_INPUTS_FOLLOW_SYMLINKS : 0);
	enum pk_enforcement claims, foreign;
	int status = EXIT_USAGE;

	if (!lint_modes(vals, &claims, &foreign))
		return EXIT_USAGE;
	struct pk_lint *l = pk_lint_new();
	if (l == NULL)
		goto nomem;
	pk_lint_set_enforcement(l, claims, foreign);
	size_t max_bytes = (size_t)pk_flags_get_num(vals, F_MAX_FILE_SIZE);
	pk_lint_set_max_file_size(l, max_bytes);
	unsigned jobs = (unsigned)pk_flags_get_num(vals, F_JOBS);
	if (jobs == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		jobs = cpus > 0 && cpus < PK_LINT_MAX_JOBS ? (unsigned)cpus : 1;
	}
	if (lint_inputs(l, pos, npos, flags, verbose, jobs) != PK_OK ||
	    write_report(l, output, verbose, fail_warn) != PK_OK)
		goto nomem;
	status = pk_lint_exit_code(l, fail_warn);
	if (fflush(stdout) != 0) {
		perror("poolkeeper lint: writing the report");
		status = EXIT_USAGE;
	}
	pk_lint_free(l);
	return status;
nomem:
	fprintf(stderr, "poolkeeper lint: out of memory\n");
	pk_lint_free(l);
	return EXIT_USAGE;
}

static int cmd_lint(int argc, char *argv[])
{
	struct pk_flag_value vals[F_COUNT];
	const char **pos = calloc((size_t)argc + 1, sizeof(*pos));
	struct pk_err err = {{0}};
	size_t npos = 0;
	int status = EXIT_USAGE;

	if (pos == NULL) {
		fprintf(stderr, "poolkeeper lint: out of memory\n");
		return EXIT_USAGE;
	}
	if (pk_flags_parse(lint_flags, F_COUNT, argc, argv, vals, pos, &npos, &err) != PK_OK) {
		fprintf(stderr, "poolkeeper lint: %s\nRun 'poolkeeper lint --help' for usage.\n",
		        err.msg);
	} else if (pk_flags_get_bool(vals, F_HELP)) {
		pk_flags_print_help(stdout, lint_usage, lint_summary, lint_flags, F_COUNT);
		status = 0;
	} else if (npos == 0) {
		fprintf(stderr, "poolkeeper lint: name at least one FILE, DIR or - (standard "
		                "input)\nRun 'poolkeeper lint --help' for usage.\n");
	} else {
		status = lint_and_report(vals, pos, npos);
	}
	free(pos);
	return status;
}

int main(int argc, char *argv[])
{
	if (argc < 2) {
		print_main_help(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		if (argc > 2 && !strcmp(argv[2], "lint")) {
			pk_flags_print_help(stdout, lint_usage, lint_summary, lint_flags, F_COUNT);
			return 0;
		}
		print_main_help(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("poolkeeper %s\n", PK_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "lint"))
		return cmd_lint(argc - 2, argv + 2);
	if (!strcmp(cmd, "conformance"))
		return pk_conformance_main(argc - 2, argv + 2);
	if (!strcmp(cmd, "audit"))
		return pk_audit_main(argc - 2, argv + 2);
	if (!strcmp(cmd, "usage"))
		return pk_usage_main(argc - 2, argv + 2);
	if (!strcmp(cmd, "convert"))
		return pk_convert_main(argc - 2, argv + 2);
	fprintf(stderr, "poolkeeper: unknown command \"%s\"\nRun 'poolkeeper --help' for usage.\n",
	        cmd);
	return EXIT_USAGE;
}
