/*
 * kea_connections.c - where the Kea backend's connections come from: the
 * KeaServer objects (cluster-scoped: spec.url, spec.caBundle,
 * spec.credentialsSecretRef.name, spec.owner) and the basic-auth Secrets
 * they name, in the controller's credentials namespace only (keys
 * `username` and `password`). The controller watches both (backend.h,
 * watches) and tells every change here; each change makes the server's
 * connection again (pk_kea_server_set), so rotated credentials are used
 * from the next call on, and the claims not Ready yet are looked at again.
 * A password is never logged.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base64.h"
#include "json.h"
#include "kea_internal.h"
#include "log.h"

static const struct pk_backend_watch watch_list[] = {
    [KEA_WATCH_SERVERS] = {PK_POOL_GROUP, PK_POOL_VERSION, PK_KEA_SERVER_RESOURCE, false},
    [KEA_WATCH_SECRETS] = {"", "v1", "secrets", true},
};

const struct pk_backend_watch *kea_watches(void *self, size_t *n)
{
	(void)self;
	*n = sizeof(watch_list) / sizeof(watch_list[0]);
	return watch_list;
}

/* What a KeaServer says. */
struct server_spec {
	char *url, *ca, *secret, *owner;
};

static void spec_free(void *v)
{
	struct server_spec *s = v;
	if (s == NULL)
		return;
	free(s->url);
	free(s->ca);
	free(s->secret);
	free(s->owner);
	free(s);
}

/* A Secret's credentials. */
struct credentials {
	char *user, *password;
};

static void credentials_free(void *v)
{
	struct credentials *c = v;
	if (c == NULL)
		return;
	free(c->user);
	kea_wipe(c->password);
	free(c);
}

int kea_connections_init(struct kea_backend *b)
{
	b->server_specs = pk_strmap_new();
	b->credentials = pk_strmap_new();
	return b->server_specs && b->credentials ? PK_OK : PK_ERR_NOMEM;
}

void kea_connections_free(struct kea_backend *b)
{
	pk_strmap_free(b->server_specs, spec_free);
	pk_strmap_free(b->credentials, credentials_free);
}

static char *dup_member(const json_t *o, const char *name)
{
	const char *s = pk_json_cstr_at(o, name);
	return s != NULL && s[0] != '\0' ? kea_dup(s) : NULL;
}

/* A KeaServer's spec, or NULL (logged, naming the field) when it cannot be used. */
static struct server_spec *spec_of(const char *name, const json_t *obj)
{
	const json_t *spec = json_object_get(obj, "spec");
	const char *url = pk_json_cstr_at(spec, "url");
	if (url == NULL || strncmp(url, "https://", 8) != 0) {
		pk_log_warn("KeaServer not used: spec.url must be the agent's https:// URL",
		            PK_LOG_STR("keaserver", name), PK_LOG_STR("url", url ? url : ""));
		return NULL;
	}
	struct server_spec *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->url = strdup(url);
	s->ca = dup_member(spec, "caBundle");
	s->secret = dup_member(json_object_get(spec, "credentialsSecretRef"), "name");
	s->owner = dup_member(spec, "owner");
	if (s->url == NULL) {
		spec_free(s);
		return NULL;
	}
	return s;
}

/* The text of a Secret's data member (base64), or NULL. */
static char *data_text(const json_t *obj, const char *member)
{
	const char *b64 = pk_json_cstr_at(json_object_get(obj, "data"), member);
	unsigned char *raw = NULL;
	size_t n = 0;
	if (b64 == NULL || pk_base64_decode(b64, strlen(b64), &raw, &n) != PK_OK)
		return NULL;
	char *text = malloc(n + 1);
	if (text != NULL) {
		memcpy(text, raw, n);
		text[n] = '\0';
	}
	memset(raw, 0, n);
	free(raw);
	return text;
}

/* Makes the connection of server `name` from its spec and its Secret (under b->mu: the
 * strings are copied by pk_kea_server_set, which takes b->mu itself, so it is called after). */
struct made {
	char name[254];
	char *url, *ca, *user, *password, *owner;
};

static void made_of(struct kea_backend *b, const char *name, struct made *m)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	const struct server_spec *s = pk_strmap_get(b->server_specs, name);
	if (s == NULL)
		return;
	const struct credentials *c = s->secret ? pk_strmap_get(b->credentials, s->secret) : NULL;
	m->url = s->url;
	m->ca = s->ca;
	m->owner = s->owner;
	m->user = c != NULL ? c->user : NULL;
	m->password = c != NULL ? c->password : NULL;
}

struct naming {
	const char *secret;
	char names[8][254];
	size_t n;
};

static void servers_naming(void *ud, const char *key, void *value)
{
	struct naming *n = ud;
	const struct server_spec *s = value;
	if (n->n < 8 && s->secret != NULL && strcmp(s->secret, n->secret) == 0)
		snprintf(n->names[n->n++], sizeof(n->names[0]), "%s", key);
}

/* Sets the connection of each named server again; the copies are made under b->mu. */
static void remake(struct kea_backend *b, char names[][254], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_lock(&b->mu);
		struct made m;
		made_of(b, names[i], &m);
		char *url = kea_dup(m.url), *ca = kea_dup(m.ca), *user = kea_dup(m.user),
		     *password = kea_dup(m.password), *owner = kea_dup(m.owner);
		pthread_mutex_unlock(&b->mu);
		if (pk_kea_server_set(&b->seam, names[i], url, ca, user, password, owner) != PK_OK)
			pk_log_error("out of memory setting a KeaServer's connection",
			             PK_LOG_STR("keaserver", names[i]));
		free(url);
		free(ca);
		free(user);
		kea_wipe(password);
		free(owner);
	}
}

static void server_changed(struct kea_backend *b, const char *name, const json_t *obj)
{
	struct server_spec *s = obj != NULL ? spec_of(name, obj) : NULL;
	pthread_mutex_lock(&b->mu);
	spec_free(pk_strmap_remove(b->server_specs, name));
	if (s != NULL && pk_strmap_put(b->server_specs, name, s, NULL) != PK_OK) {
		spec_free(s);
		s = NULL;
	}
	pthread_mutex_unlock(&b->mu);
	char names[1][254];
	snprintf(names[0], sizeof(names[0]), "%s", name);
	remake(b, names, 1);
}

static void secret_changed(struct kea_backend *b, const char *key, const json_t *obj)
{
	/* The informer watches the credentials namespace only: the name is the Secret's. */
	const char *slash = strchr(key, '/');
	const char *name = slash != NULL ? slash + 1 : key;
	struct credentials *c = NULL;
	if (obj != NULL && (c = calloc(1, sizeof(*c))) != NULL) {
		c->user = data_text(obj, "username");
		c->password = data_text(obj, "password");
		if (c->user == NULL || c->password == NULL) {
			pk_log_warn("Secret without data.username and data.password: not used",
			            PK_LOG_STR("secret", key));
			credentials_free(c);
			c = NULL;
		}
	}
	struct naming n = {.secret = name};
	pthread_mutex_lock(&b->mu);
	credentials_free(pk_strmap_remove(b->credentials, name));
	if (c != NULL && pk_strmap_put(b->credentials, name, c, NULL) != PK_OK)
		credentials_free(c);
	pk_strmap_foreach(b->server_specs, servers_naming, &n);
	pthread_mutex_unlock(&b->mu);
	remake(b, n.names, n.n);
}

void kea_watched(void *self, size_t i, const char *key, const json_t *obj, bool *requeue)
{
	struct kea_backend *b = self;
	if (i == KEA_WATCH_SERVERS)
		server_changed(b, key, obj);
	else if (i == KEA_WATCH_SECRETS)
		secret_changed(b, key, obj);
	*requeue = true; /* claims that failed on the old connection try the new one */
}
