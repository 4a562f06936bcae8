#!/usr/bin/env bats
# The image recipe without a container engine: scripts/check-image-libs
# checks the built binaries' shared libraries against the packages the
# Dockerfile's runtime stage installs (`make test` runs it after the build).
# Here it must pass on the real Dockerfile and fail, naming the library and
# the package, on copies of it that install less. No control plane needed.

load helpers

setup() {
  BIN_DIR=$(dirname "$(pk_bin poolkeeper-webhook)")
  CHECK=$REPO_ROOT/scripts/check-image-libs
  DOCKERFILE=$REPO_ROOT/Dockerfile
  TMP=$(mktemp -d "${BATS_TEST_TMPDIR:-/tmp}/image.XXXXXX")
}

# without PACKAGE: a copy of the Dockerfile whose runtime stage does not
# install PACKAGE (the list is checked to have had it).
without() {
  grep -qE "^ +ca-certificates .*\\b$1\\b" "$DOCKERFILE"
  sed -E "/^# runtime packages: begin/,/^# runtime packages: end/ s/ $1( |$)/\\1/" "$DOCKERFILE" >"$TMP/Dockerfile"
  ! grep -qE "^ +ca-certificates .*\\b$1\\b" "$TMP/Dockerfile"
}

@test "the runtime stage installs every library the shipped binaries load" {
  run "$CHECK" "$BIN_DIR"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"4 binaries (poolkeeper-webhook poolkeeper-controller poolkeeper poolkeeper-certs)"* ]]
  # What it ignores is said: libc6's libraries, which the base image has.
  [[ $output == *"ignored (libc6, in the base image): "*"libc.so.6"* ]]
  # A library only a dependency brings is found through it: libcurl4
  # brings libnghttp2-14, which is not listed.
  ! grep -qE '^ +ca-certificates .*\blibnghttp2-14\b' "$DOCKERFILE"
  ldd "$BIN_DIR/poolkeeper-controller" | grep -q 'libnghttp2.so.14'
}

@test "a runtime stage without libjansson4 is refused, naming library and package" {
  without libjansson4
  run "$CHECK" --dockerfile "$TMP/Dockerfile" "$BIN_DIR"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"poolkeeper-controller needs libjansson.so.4 from package libjansson4, which the runtime stage of $TMP/Dockerfile does not install"* ]]
}

@test "a library linked directly must be listed, not only pulled in as a dependency" {
  # libmicrohttpd12 depends on libgnutls30, so apt would install it, but the
  # webhook links libgnutls.so.30 itself: the list must say so.
  without libgnutls30
  run "$CHECK" --dockerfile "$TMP/Dockerfile" "$BIN_DIR"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"poolkeeper-webhook links libgnutls.so.30 directly; its package libgnutls30 is only a dependency of libmicrohttpd12"* ]]
}

@test "a Dockerfile without the runtime packages markers, or without a shipped binary built, is refused" {
  grep -v '^# runtime packages:' "$DOCKERFILE" >"$TMP/Dockerfile"
  run "$CHECK" --dockerfile "$TMP/Dockerfile" "$BIN_DIR"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *'has no "# runtime packages: begin/end" section'* ]]

  mkdir "$TMP/bin"
  cp "$BIN_DIR/poolkeeper" "$BIN_DIR/poolkeeper-webhook" "$BIN_DIR/poolkeeper-certs" "$TMP/bin/"
  run "$CHECK" "$TMP/bin"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"poolkeeper-controller: the Dockerfile copies it but $TMP/bin/poolkeeper-controller is not built"* ]]
}
