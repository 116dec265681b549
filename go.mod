module github.com/agentledger/agentledger

go 1.26.0

require github.com/gowebpki/jcs v1.0.2
