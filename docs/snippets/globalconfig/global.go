// Package globalconfig is docs/plugins.md's global configuration contributor: it turns on
// vhost IOMMU support in the Open_vSwitch row when its configuration says so.
package globalconfig

import (
	"context"
	"strconv"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Config is the plugin's configuration (its config: in the daemon's file).
type Config struct {
	IOMMU bool `json:"iommu"`
}

// IOMMU is the plugin. sdk.BaseWithConfig decodes Config at every Configure.
type IOMMU struct{ sdk.BaseWithConfig[Config] }

// New returns the plugin with its configuration's schema.
func New() *IOMMU {
	p := &IOMMU{}
	p.Schema = api.ConfigSchema{
		JSONSchema: `{"type":"object","properties":{"iommu":{"type":"boolean"}},"additionalProperties":false}`,
		Doc:        "iommu: set other_config:vhost-iommu-support (default false)",
	}
	return p
}

func (*IOMMU) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "iommu", Version: "0.1.0"}, nil
}

// Contribute returns the whole contribution; the host calls it after every Configure.
func (p *IOMMU) Contribute(context.Context) (api.GlobalConfig, error) {
	return api.GlobalConfig{OtherConfig: map[string]string{
		"vhost-iommu-support": strconv.FormatBool(p.Config().IOMMU),
	}}, nil
}
