# make demo: the project end to end. demo-host (mk/host.mk) moves RDMA Write,
# Read and Send data between two endpoints over TCP on 127.0.0.1, through the
# model card and then the sim card with the RTL in the loop. demo-mpa then
# shows the wire: a requester's RDMAP conversation framed by golden/mpa
# (markers, CRC32c) through `iwdump -encode` and decoded back.

demo: tools demo-host demo-mpa
	@echo "make demo: done"

demo-mpa:
	@mkdir -p build
	@$(GO) build -o build/iwdump ./cmd/iwdump
	@$(GO) build -o build/demostream ./internal/tools/demostream
	@echo "== MPA on the wire: a Send, an RDMA Write in 3 segments, a Read Request, a Send with SE+Invalidate, a Terminate"
	@echo "== framed with markers and CRC32c by iwdump -encode (golden/mpa), then decoded by iwdump -stream:"
	@build/demostream -markers | build/iwdump -encode -markers > build/demo-mpa.stream
	@build/iwdump -stream -no-startup -markers build/demo-mpa.stream
	@echo "== $$(wc -c < build/demo-mpa.stream) octets of stream; the same stream with one octet flipped:"
	@cp build/demo-mpa.stream build/demo-mpa-bad.stream
	@printf '\x55' | dd of=build/demo-mpa-bad.stream bs=1 seek=100 conv=notrunc status=none
	@rc=0; build/iwdump -stream -no-startup -markers build/demo-mpa-bad.stream || rc=$$?; \
	  [ $$rc -eq 1 ] || { echo "demo-mpa: expected iwdump to report the corruption (exit 1), got $$rc"; exit 1; }
	@echo "== the corrupted FPDU was caught by its CRC and nothing after it was delivered (RFC 5044 §8), as expected"
