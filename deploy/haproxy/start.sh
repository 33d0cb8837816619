#!/bin/sh
# Entrypoint of the `lb` service in deploy/compose.yaml: picks the certificate
# HAProxy serves on :8443, then starts HAProxy with haproxy.cfg.
#
# A PEM file holding the certificate chain and its private key, mounted at
# /usr/local/etc/haproxy/certs/lb.pem, is used as it is. Without one, a
# self-signed certificate for localhost is generated (demo only: clients must
# skip verification, e.g. curl -k).
set -eu

mounted=/usr/local/etc/haproxy/certs/lb.pem
generated=/var/lib/haproxy/self-signed.pem

if [ -f "$mounted" ]; then
    LB_PEM=$mounted
else
    LB_PEM=$generated
    if [ ! -s "$generated" ]; then
        umask 077
        tmp=$(mktemp -d)
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -days 90 -subj '/CN=localhost' \
            -addext 'subjectAltName=DNS:localhost,IP:127.0.0.1' \
            -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
        cat "$tmp/cert.pem" "$tmp/key.pem" > "$generated"
        rm -rf "$tmp"
        echo "lb: no certificate at $mounted; generated a self-signed one for localhost (demo only)" >&2
    fi
fi
export LB_PEM

exec docker-entrypoint.sh haproxy -f /usr/local/etc/haproxy/haproxy.cfg
