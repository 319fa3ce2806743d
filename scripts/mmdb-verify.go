// MaxMind's own Go readers on ipsift's MMDB files: Reader.Verify() of maxminddb-golang (the
// search tree, the data section holding only what the tree reaches, the metadata) for every
// file whose type names Anonymous, geoip2-golang's AnonymousIP() on
// each address given after --anonymous-ip. One JSON line a file.
//
// Built with Debian's packages, no network (test/mmdb-go.test.ts runs it):
//   GO111MODULE=off GOPATH=/usr/share/gocode go run scripts/mmdb-verify.go [--anonymous-ip ADDR,…] FILE…
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/oschwald/geoip2-golang"
	"github.com/oschwald/maxminddb-golang"
)

type report struct {
	File         string                 `json:"file"`
	DatabaseType string                 `json:"database_type"`
	NodeCount    uint                   `json:"node_count"`
	Verify       string                 `json:"verify"`
	AnonymousIP  map[string]interface{} `json:"anonymous_ip,omitempty"`
}

func main() {
	args := os.Args[1:]
	var addresses []string
	if len(args) >= 2 && args[0] == "--anonymous-ip" {
		addresses = strings.Split(args[1], ",")
		args = args[2:]
	}
	failed := false
	for _, file := range args {
		r := report{File: file, Verify: "ok"}
		db, err := maxminddb.Open(file)
		if err != nil {
			r.Verify = "open: " + err.Error()
			failed = true
		} else {
			r.DatabaseType = db.Metadata.DatabaseType
			r.NodeCount = db.Metadata.NodeCount
			if err := db.Verify(); err != nil {
				r.Verify = err.Error()
				failed = true
			}
			db.Close()
		}
		if len(addresses) > 0 && strings.Contains(r.DatabaseType, "Anonymous") {
			r.AnonymousIP = map[string]interface{}{}
			typed, err := geoip2.Open(file)
			if err != nil {
				r.AnonymousIP["error"] = err.Error()
				failed = true
			} else {
				for _, a := range addresses {
					rec, err := typed.AnonymousIP(net.ParseIP(a))
					if err != nil {
						r.AnonymousIP[a] = "error: " + err.Error()
						failed = true
						continue
					}
					r.AnonymousIP[a] = rec
				}
				typed.Close()
			}
		}
		line, _ := json.Marshal(r)
		fmt.Println(string(line))
	}
	if failed {
		os.Exit(1)
	}
}
