// Package api is the contract between ovsplaned and its plugins: the Go interfaces a plugin
// implements (Plugin, and per capability PortProvider, Watcher, GlobalConfigContributor,
// FlowProgrammer, DataPath), the Go types of their requests and answers, the typed Error that
// crosses the process boundary with its code, and the checks the host makes on every answer
// (ValidateInfo, ValidateAttachment, ValidateFlowSet, ValidateChanges, ValidateGlobalConfig,
// with the package limits).
//
// A plugin implements these interfaces and hands its value to plugins/sdk.Serve; embedding
// sdk.Base leaves only Info, Validate and Attach to write for a port type. How the contract
// crosses the process boundary (hashicorp/go-plugin, gRPC, the protobuf package
// ovsplane.plugin.v1 in proto/ and gen/) is a transport detail no author needs: the glue is in
// plugins/internal/wire, which the SDK and the host use.
//
// Every method takes a context; the host sets a deadline on every call and a plugin must
// return promptly when it expires. An *Error keeps its Code, Message and Problems across the
// boundary; a context error arrives as DeadlineExceeded or Canceled; any other error as
// Internal.
package api
