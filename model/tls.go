package model

// TLS names PEM files: a private key, its certificate and the CA certificate that verifies the
// peer. Nothing in model reads them; the daemon and the API client do, when they connect or
// listen. The struct tags are the configuration file's keys.
type TLS struct {
	PrivateKey  string `mapstructure:"private_key" yaml:"private_key,omitempty"`
	Certificate string `mapstructure:"certificate" yaml:"certificate,omitempty"`
	CACert      string `mapstructure:"ca_cert" yaml:"ca_cert,omitempty"`
}
