# Sourced (not run) by the npm scripts from the repository root: makes `node` on PATH a Node the
# project supports (package.json `engines`), so everything they start (npm ci, tsc, eslint, vitest,
# tsx and each service) runs on it.
#
# A machine Node that is new enough is used as it is. An older one (Node 20 is out of support) gets a
# project-local Node 24 LTS in .tools/, from the npm registry rather than nodejs.org (which locked-down
# networks often block): the `node-<os>-<arch>` packages are the official builds that the `node` npm
# package installs. Taking the platform package directly needs no install script, so it works with
# npm's `ignore-scripts` too. Only the binary comes from there; the machine's npm runs on it.
# LEADLINE_NODE_VERSION picks another version (a major, or an exact x.y.z).

# package.json `engines`: 22.22 (testcontainers 12 needs it), as major * 1000 + minor.
leadline_node_minimum=22022
leadline_node_version="${LEADLINE_NODE_VERSION:-24}"

leadline_node_level() {
  "${1:-node}" -p 'const [major, minor] = process.versions.node.split("."); major * 1000 + Number(minor)' 2>/dev/null || echo 0
}

if [ "$(leadline_node_level)" -lt "$leadline_node_minimum" ]; then
  case "$(uname -s)" in
    Linux) leadline_node_os=linux ;;
    Darwin) leadline_node_os=darwin ;;
    *) echo "No project-local Node for $(uname -s): install Node $leadline_node_version or later." >&2; exit 1 ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) leadline_node_arch=x64 ;;
    aarch64 | arm64) leadline_node_arch=arm64 ;;
    *) echo "No project-local Node for $(uname -m): install Node $leadline_node_version or later." >&2; exit 1 ;;
  esac
  leadline_node_dir="$PWD/.tools/node-$leadline_node_version"
  leadline_node_bin="$leadline_node_dir/node_modules/.bin"
  if [ "$(leadline_node_level "$leadline_node_bin/node")" -lt "$leadline_node_minimum" ]; then
    echo "Node $(node -v 2>/dev/null || echo '(none)') is older than 22.22: installing Node $leadline_node_version into .tools/ from the npm registry" >&2
    rm -rf "$leadline_node_dir"
    mkdir -p "$leadline_node_dir"
    # A package.json of its own, so npm installs here and not into the workspace above.
    echo '{ "private": true }' >"$leadline_node_dir/package.json"
    (cd "$leadline_node_dir" && npm install --no-save --no-package-lock --no-audit --no-fund --ignore-scripts \
      --loglevel=error "node-$leadline_node_os-$leadline_node_arch@$leadline_node_version" >&2)
    if [ "$(leadline_node_level "$leadline_node_bin/node")" -lt "$leadline_node_minimum" ]; then
      echo "The project-local Node does not run: install Node $leadline_node_version or later." >&2
      exit 1
    fi
  fi
  export PATH="$leadline_node_bin:$PATH"
fi
