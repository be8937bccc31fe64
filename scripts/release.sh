#!/usr/bin/env bash
# The release steps, shared by .github/workflows/release.yml and the local proof
# (tests/e2e/test_release.py, against a registry on 127.0.0.1). docs/releasing.md
# describes the scheme.
#
#   scripts/release.sh version TAG
#       TAG must be vMAJOR.MINOR.PATCH and equal gate/__init__.py's __version__;
#       prints "VERSION MAJOR" (e.g. "1.2.3 1").
#   scripts/release.sh publish IMAGE VERSION
#       for each platform in $PLATFORMS (default linux/amd64,linux/arm64): docker build
#       and docker push IMAGE:VERSION-OS-ARCH; then one manifest list of those images
#       by digest, pushed as IMAGE:VERSION and IMAGE:vMAJOR (the same digest). Prints
#       IMAGE@sha256:DIGEST on its last line (logs go to stderr).
#       $BASE_IMAGE overrides the Dockerfile's pinned base (a digest reference, or a
#       local stand-in); $BUILD_NETWORK=host builds with the host's network;
#       $SOURCE_URL labels the image with the repository it comes from.
#   scripts/release.sh pin-action IMAGE@sha256:DIGEST [ACTION_YML]
#       rewrites action.yml's `image: Dockerfile` to `image: docker://IMAGE@sha256:...`.
#   scripts/release.sh release-commit VERSION IMAGE@sha256:DIGEST
#       in this git checkout (clean, HEAD = the tagged source commit): commits the
#       pinned action.yml on top of HEAD (a commit on no branch) and points the tags
#       vVERSION and vMAJOR at it (moving them). Prints the release commit's SHA.
#       Pushing the tags is the caller's step.
#   scripts/release.sh notes VERSION
#       prints CHANGELOG.md's section for VERSION (fails when there is none).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { echo "release: $*" >&2; exit 1; }
log() { echo "release: $*" >&2; }
semver='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$'
digest_ref='^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+@sha256:[0-9a-f]{64}$'

project_version() {
  sed -n 's/^__version__ = "\(.*\)"$/\1/p' gate/__init__.py
}

major_of() {
  [[ "$1" =~ $semver ]] || die "'$1' is not MAJOR.MINOR.PATCH"
  echo "${BASH_REMATCH[1]}"
}


cmd_version() {
  local tag=${1:-}
  [[ "$tag" == v* ]] || die "tag '$tag' does not start with v"
  local version=${tag#v}
  local major
  major=$(major_of "$version")
  local declared
  declared=$(project_version)
  [ "$version" = "$declared" ] \
    || die "tag $tag does not match gate/__init__.py __version__ = \"$declared\": bump the version (and CHANGELOG.md) in a commit on main, then tag that commit"
  echo "$version $major"
}

cmd_publish() {
  local image=${1:-} version=${2:-}
  if [ -z "$image" ] || [ -z "$version" ]; then die "usage: publish IMAGE VERSION"; fi
  local major
  major=$(major_of "$version")
  # dockerd treats a registry on 127.0.0.0/8 (or localhost) as plain HTTP by default;
  # the docker CLI's manifest commands need to be told so
  local insecure=()
  case "${image%%/*}" in
    127.*|localhost|localhost:*) insecure=(--insecure) ;;
  esac
  # one plain image manifest per platform: no attestation manifests from BuildKit
  # (the attestations are GitHub's, made on the final digest by the workflow)
  export BUILDX_NO_DEFAULT_ATTESTATIONS=1
  local build=(docker build)
  [ "${BUILD_NETWORK:-}" = "host" ] && build+=(--network host)
  [ -n "${BASE_IMAGE:-}" ] && build+=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
  local labels=(--label "org.opencontainers.image.version=$version"
    --label "org.opencontainers.image.revision=$(git rev-parse HEAD)")
  # the repository the registry links the package to (the workflow passes its own)
  [ -n "${SOURCE_URL:-}" ] && labels+=(--label "org.opencontainers.image.source=$SOURCE_URL")
  local platforms=${PLATFORMS:-linux/amd64,linux/arm64}
  local refs=() platform
  IFS=',' read -r -a list <<<"$platforms"
  for platform in "${list[@]}"; do
    local tag="$image:$version-${platform//\//-}"
    log "building $tag ($platform)"
    "${build[@]}" --platform "$platform" "${labels[@]}" -t "$tag" . >&2
    log "pushing $tag"
    docker push "$tag" >&2
    local ref
    ref=$(docker image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$tag" \
      | grep -m1 "^$image@sha256:" || true)
    [[ "$ref" =~ $digest_ref ]] || die "no digest for $tag after the push (got '$ref')"
    # a platform image must be one image manifest, never a list of its own
    local manifest
    manifest=$(docker manifest inspect "${insecure[@]}" "$ref") || die "cannot read $ref back"
    if grep -q '"manifests"' <<<"$manifest"; then
      die "$ref is a manifest list, not one image (an image store adding attestations?)"
    fi
    refs+=("$ref")
  done
  local digest="" name pushed
  for name in "$image:$version" "$image:v$major"; do
    docker manifest create "${insecure[@]}" --amend "$name" "${refs[@]}" >&2
    pushed=$(docker manifest push "${insecure[@]}" --purge "$name" | tail -1)
    [[ "$pushed" =~ ^sha256:[0-9a-f]{64}$ ]] || die "docker manifest push $name printed '$pushed'"
    log "pushed $name = $pushed"
    if [ -z "$digest" ]; then digest=$pushed; fi
    [ "$pushed" = "$digest" ] || die "$name got $pushed, not $digest: the tags differ"
  done
  echo "$image@$digest"
}

cmd_pin_action() {
  local ref=${1:-} file=${2:-action.yml}
  [[ "$ref" =~ $digest_ref ]] || die "'$ref' is not IMAGE@sha256:<64 hex>"
  local count
  count=$(grep -c '^  image: ' "$file" || true)
  [ "$count" = "1" ] || die "$file has $count 'image:' lines under runs, expected 1"
  grep -q '^  image: Dockerfile$' "$file" \
    || die "$file does not say 'image: Dockerfile' (already a release commit?): $(grep '^  image: ' "$file")"
  local tmp="$file.tmp.$$"
  sed "s|^  image: Dockerfile\$|  image: docker://$ref|" "$file" >"$tmp"
  mv "$tmp" "$file"
  grep -qx "  image: docker://$ref" "$file" || die "rewriting $file failed"
}

cmd_release_commit() {
  local version=${1:-} ref=${2:-}
  if [ -z "$version" ] || [ -z "$ref" ]; then
    die "usage: release-commit VERSION IMAGE@sha256:DIGEST"
  fi
  local major
  major=$(major_of "$version")
  [ -z "$(git status --porcelain --untracked-files=no)" ] || die "the checkout has changes"
  local source
  source=$(git rev-parse HEAD)
  git checkout -q --detach  # the release commit goes on no branch
  cmd_pin_action "$ref" action.yml
  git add action.yml
  git -c user.name="${GIT_USER_NAME:-github-actions[bot]}" \
      -c user.email="${GIT_USER_EMAIL:-41898282+github-actions[bot]@users.noreply.github.com}" \
      commit -q -m "release v$version: action.yml runs the published image" \
      -m "image: docker://$ref" -m "source: $source (this commit's parent; only action.yml differs)"
  local release
  release=$(git rev-parse HEAD)
  git tag -f "v$version" "$release" >/dev/null
  git tag -f "v$major" "$release" >/dev/null
  log "v$version and v$major -> $release (source $source)"
  echo "$release"
}

cmd_notes() {
  local version=${1:-}
  local notes
  notes=$(awk -v v="$version" '
    $0 ~ "^## \\[" { if (found) exit; if (index($0, "## [" v "]") == 1) { found = 1; next } }
    found { print }' CHANGELOG.md)
  [ -n "$(echo "$notes" | tr -d '[:space:]')" ] || die "CHANGELOG.md has no section ## [$version]"
  echo "$notes"
}

case "${1:-}" in
  version) shift; cmd_version "$@" ;;
  publish) shift; cmd_publish "$@" ;;
  pin-action) shift; cmd_pin_action "$@" ;;
  release-commit) shift; cmd_release_commit "$@" ;;
  notes) shift; cmd_notes "$@" ;;
  *) die "usage: $0 version|publish|pin-action|release-commit|notes ... (see the header)" ;;
esac
