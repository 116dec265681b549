package aarts

// Artifact is a security-relevant element of an event (AARTS §6.4).
type Artifact struct {
	Type        string `json:"type"`
	Value       string `json:"value"`
	Context     string `json:"context,omitempty"`
	SourceField string `json:"source_field,omitempty"`
}

// Artifact types (AARTS §6.4).
const (
	ArtifactURL            = "url"
	ArtifactCommand        = "command"
	ArtifactFilePath       = "file_path"
	ArtifactPackage        = "package"
	ArtifactNetworkAddress = "network_address"
	ArtifactContent        = "content"
)
