// Package datum is ovsplane's one model of OVSDB values (RFC 7047): atoms and datums, column
// types with their constraints, how OVSDB orders and combines values, and how ovs-vsctl
// writes and reads them. ovsdb/dbcmd (vsctl's OVSDB engine), ovsdb/embedded (the embedded
// ovsdb-server), internal/cli (the table formatter) and internal/cli/vsctl all use it. It
// imports only the standard library and does no I/O, so any layer may import it.
//
// # Values
//
// An Atom is one value of an AtomicType (integer, real, boolean, string, uuid); a Datum is
// a column's value: Keys sorted by CompareAtoms without duplicates and, for a map, Values
// parallel to Keys. A ColumnType (key BaseType, optional value BaseType, Min and Max elements)
// comes from a schema with ColumnTypeFromJSON or ColumnTypeFromValue. Every function that
// returns a Datum returns it sorted; functions that take one require it sorted (NewDatum sorts
// and deduplicates arbitrary atoms, SortUnique refuses duplicates). CompareAtoms and every
// function built on it expect atoms of one type; the result for mixed types is meaningless.
//
// # Algebra
//
// Union and Subtract are OVSDB's set and map algebra (the "insert" and "delete" mutators,
// ovs-vsctl's add and remove), Datum.Includes and Excludes its condition functions, Diff the
// difference an update2 "modify" carries; DefaultDatum is the value OVSDB gives a column a
// new row leaves out.
//
// # ovs-vsctl syntax
//
// ParseDatum and ParseAtom read values in ovs-vsctl's command-line syntax and check them
// against the column's constraints, failing with ovs-vsctl 3.1's message text (without the
// "ovs-vsctl: " prefix). FormatDatum and FormatAtom write values as ovs-vsctl's --data=string,
// bare and json do, byte for byte. QuoteJSONString, InvalidUTF8, ParseCLong and ScanCLong are
// the pieces of OVS's JSON and C-library behaviour those rest on.
//
// # Hash order
//
// HashString is OVS's hash_string, HmapOrder the order an OVS hmap iterates its entries in and
// HashOrder the two together for string keys; ovs-vsctl's output follows that order in
// several places (hmap.go says where).
//
// # Testing
//
// TestValueDifferential and its siblings run values through the real ovs-vsctl against a
// scratch ovsdb-server and require the same stored value or the same error message; they skip
// where OVS is not installed. FuzzParseDatum checks that no input panics and that every parsed
// datum formats back to a value that parses to the same datum.
package datum
