package api

// APIVersion is the revision of the plugin protocol (ovsplane.plugin.v1) this contract
// describes, "MAJOR.MINOR". The minor number grows with additive changes (new calls, fields,
// enum values). The host picks one of Info.APIVersions and passes it in
// ConfigureRequest.APIVersion.
const APIVersion = "1.0"

// SupportedAPIVersions returns the revisions this contract can talk, newest first: what the
// SDK puts in Info.APIVersions when a plugin leaves it empty.
func SupportedAPIVersions() []string { return []string{APIVersion} }
