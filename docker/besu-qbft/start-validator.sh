#!/bin/sh
# Start QBFT validator number $1 (1..4) from the network files `generate` wrote to /network.
# Validator 1 is the bootnode; the others find it by its enode (its public key at its fixed address).
set -eu
index="$1"
key_dir=$(ls -d /network/keys/0x* | sort | sed -n "${index}p")
boot_dir=$(ls -d /network/keys/0x* | sort | sed -n "1p")
boot_pub=$(sed 's/^0x//' "$boot_dir/key.pub")
ip="172.30.0.1${index}"
set -- --data-path=/data --genesis-file=/network/genesis.json --node-private-key-file="$key_dir/key" \
  --p2p-host="$ip" --p2p-port=30303 --min-gas-price=0 \
  --rpc-http-enabled --rpc-http-host=0.0.0.0 --rpc-http-port=8545 --rpc-http-api=ETH,NET,WEB3,QBFT \
  --host-allowlist='*' --rpc-http-cors-origins=all --rpc-http-max-request-content-length=20000000
if [ "$index" != "1" ]; then
  set -- "$@" --bootnodes="enode://${boot_pub}@172.30.0.11:30303"
fi
exec besu "$@"
