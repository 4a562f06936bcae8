/*
 * json.h - reading jansson values: one set of typed getters that answer
 * NULL (or false) when a member is missing, when a level on the way is not
 * an object, or when the value is of another type, so that a caller reads
 * obj.metadata.name in one call and tests one result.
 *
 * JSON strings as C strings. The API server accepts "\u0000" inside any
 * string (an annotation value, a reference's name), and jansson keeps such
 * a string whole with its length, but json_string_value() then reads as a
 * shorter C string: "pool-a\u0000x" would compare equal to "pool-a". A
 * field that is used as a C string (names, namespaces, addresses,
 * references, kinds) is therefore read through pk_json_cstr, which treats
 * a string holding a NUL as invalid: NULL, exactly as if the field were not
 * a string.
 *
 * Everything returned is borrowed from the value read: valid while it lives
 * and is not changed. Pure: no I/O, no globals.
 */
#ifndef PK_JSON_H
#define PK_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* v as a C string: NULL when v is not a string or holds a NUL. */
const char *pk_json_cstr(const json_t *v);

/* pk_json_cstr of the member key of obj (NULL when obj is not an object). */
const char *pk_json_cstr_at(const json_t *obj, const char *key);

/* pk_json_cstr of obj.metadata.<key>: an object's name, namespace, uid... */
const char *pk_json_meta_cstr(const json_t *obj, const char *key);

/* The member key of obj when it is an object (an array); NULL otherwise. */
json_t *pk_json_obj_at(const json_t *obj, const char *key);
json_t *pk_json_arr_at(const json_t *obj, const char *key);

/* The member key of obj when it is an integer: true, and *out set. */
bool pk_json_int_at(const json_t *obj, const char *key, json_int_t *out);

/*
 * The value at a path of member names, any type: pk_json_path(obj,
 * "metadata", "annotations", key). NULL when a member is missing or a level
 * on the way is not an object.
 */
json_t *pk_json_path_keys(const json_t *v, ...);
#define pk_json_path(v, ...) pk_json_path_keys((v), __VA_ARGS__, (const char *)NULL)

/* pk_json_cstr of the value at a path of member names. */
#define pk_json_cstr_path(v, ...) pk_json_cstr(pk_json_path((v), __VA_ARGS__))

/* Whether v is a string that holds a NUL character. */
bool pk_json_has_nul(const json_t *v);

/*
 * The path of the first string in v (members and items, depth first, at
 * most PK_JSON_NUL_MAX_DEPTH deep) that holds a NUL, as
 * "metadata.annotations[\"x\"]" style text written into buf (len bytes; cut
 * when longer, always terminated): where a report names the field. False,
 * and buf "", when there is none.
 */
#define PK_JSON_NUL_MAX_DEPTH 64
bool pk_json_nul_path(const json_t *v, char *buf, size_t len);

#endif
