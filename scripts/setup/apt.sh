# Sourced by the other setup scripts. apt_install PACKAGE PURPOSE installs a
# Debian package: as root directly, otherwise through sudo when it needs no
# password; where neither can be done it says what to run and fails.
apt_install() {
  local package=$1 purpose=$2 sudo=""
  if ! command -v apt-get >/dev/null; then
    echo "error: $purpose needs the package '$package', and this system has no" \
      "apt-get: install '$package' with its package manager, then rerun make" >&2
    return 1
  fi
  if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null || ! sudo -n true 2>/dev/null; then
      echo "error: $purpose needs the Debian package '$package', which is not" \
        "installed, and installing it needs root (sudo here asks for a password" \
        "or is missing). Run: sudo apt-get install -y $package ; then rerun make" >&2
      return 1
    fi
    sudo="sudo -n"
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y -q "$package" >/dev/null 2>&1; then
    $sudo apt-get update -q >/dev/null &&
      $sudo apt-get install -y -q "$package" >/dev/null || {
      echo "error: apt-get could not install '$package' (its messages are above)" >&2
      return 1
    }
  fi
}
