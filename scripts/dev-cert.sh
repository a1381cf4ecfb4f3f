#!/bin/sh
# A development certificate for the gateway's TLS listener (docs/operations.md "TLS"): a
# throwaway CA and a server certificate it signs, made with the openssl CLI. Never for
# production, and never committed: the default directory, var/dev-tls, is git-ignored.
#
#   sh scripts/dev-cert.sh [dir] [name...]      # default: var/dev-tls localhost 127.0.0.1
#
# Writes dir/ca.pem (give it to clients: curl --cacert), dir/ca.key, dir/server.pem and
# dir/server.key (listen.tls.cert / listen.tls.key), and dir/client.pem + dir/client.key, a
# client certificate signed by the same CA for trying mutual TLS (listen.tls.ca: dir/ca.pem).
# An existing CA is kept, so clients that trust it keep working; the server and client
# certificates are made again on every run (a renewal: a running gateway picks them up).
set -eu
dir=${1:-var/dev-tls}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- localhost 127.0.0.1
command -v openssl >/dev/null 2>&1 || { echo "dev-cert: the openssl command is needed" >&2; exit 1; }
mkdir -p "$dir"
umask 077
san=""
for name in "$@"; do
  case "$name" in
    *[!0-9.]*) entry="DNS:$name" ;;
    *) entry="IP:$name" ;;
  esac
  san="${san:+$san,}$entry"
done
key_options="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
if [ ! -f "$dir/ca.pem" ] || [ ! -f "$dir/ca.key" ]; then
  # shellcheck disable=SC2086
  openssl req -x509 $key_options -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 825 -subj "/CN=agent-gateway dev CA" 2>/dev/null
fi
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" > "$dir/server.ext"
printf 'extendedKeyUsage=clientAuth\n' > "$dir/client.ext"
for role in server client; do
  subject="/CN=agent-gateway dev $role"
  [ "$role" = server ] && subject="/CN=$1"
  # shellcheck disable=SC2086
  openssl req $key_options -keyout "$dir/$role.key.new" -out "$dir/$role.csr" -subj "$subject" 2>/dev/null
  openssl x509 -req -in "$dir/$role.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/$role.pem.new" -days 90 -extfile "$dir/$role.ext" 2>/dev/null
  # Key first, then certificate, each by rename: a watcher never reads a half-written file.
  mv "$dir/$role.key.new" "$dir/$role.key"
  mv "$dir/$role.pem.new" "$dir/$role.pem"
  rm -f "$dir/$role.csr" "$dir/$role.ext"
done
chmod 644 "$dir/ca.pem" "$dir/server.pem" "$dir/client.pem"
echo "dev-cert: $dir/server.pem for $* (CA $dir/ca.pem)"
