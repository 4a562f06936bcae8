/*
 * kube_config_member.h - what the kubeconfig's readers share (kube_config.c
 * and kube_exec.c, the exec credential plugin): the limits on what they
 * read and run, and the members of a kubeconfig mapping read by type.
 */
#ifndef PK_KUBE_CONFIG_MEMBER_H
#define PK_KUBE_CONFIG_MEMBER_H

#include <stdbool.h>

#include <jansson.h>

#include "pk.h"

#define PK_KUBE_CREDENTIAL_MAX  (1u << 20) /* token file, PEM file, plugin stdout, stderr */
#define PK_KUBE_EXEC_TIMEOUT_MS 30000

/*
 * A string member of a kubeconfig mapping; NULL when absent, null or empty.
 * A present member of another type is an error (a YAML plain scalar like
 * `token: 1234` loads as an integer). `where` starts the message.
 */
PK_MUST_CHECK int pk_kube_config_member_str(const json_t *obj, const char *key, const char *where,
                                            const char **out, struct pk_err *err);

/* A true/false member; false when absent or null. */
PK_MUST_CHECK int pk_kube_config_member_bool(const json_t *obj, const char *key, const char *where,
                                             bool *out, struct pk_err *err);

#endif
