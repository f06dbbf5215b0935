// Package desired reads and checks the desired-state part of ovsplaned's configuration: the
// global other_config keys and the bridges with their ports and interfaces (model.Bridge,
// model.Port, model.Interface), with the file's rules and messages.
//
// It is the viper-free half of vswitchd/config: vswitchd/config's Load uses it for the
// desired-state keys of the file (Parse, ListShapes, Decode, Validator.Desired), and the
// clients that read or check a desired state without linking the daemon's settings loader
// use it directly: `vsctl apply -f FILE` reads its file with Load, and vsctl checks a port
// before sending it with ValidatePortWith, so a request refused by the daemon is refused
// there with the same message. The API's requests are checked with ValidateBridge and
// ValidatePortWith by the daemon.
//
// Rule: desired imports only the standard library, the YAML parser, mapstructure, model,
// model/limits and internal/oftarget; never viper, pflag or the daemon.
package desired
