# Sourced by examples/demo.sh and scripts/test: installs the Debian packages given that are not
# installed yet (apt-get, as root or through sudo), and nothing else.
ensure_packages() {
    local missing=() package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "Baton needs these Debian packages: ${missing[*]} (run as root, or install them)" >&2; return 1; }
        sudo=(sudo)
    fi
    echo "Installing ${missing[*]} ..." >&2
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# What building needs; what the tests need on top.
build_packages=(libsqlite3-dev libpq-dev libssl-dev pkg-config make)
test_packages=(postgresql nginx libjs-chart.js iproute2 curl jq chromium chromium-driver fonts-dejavu-core sqlite3 systemd zsh python3 make e2fsprogs procps man-db util-linux prometheus debootstrap systemd-container lintian binutils)
