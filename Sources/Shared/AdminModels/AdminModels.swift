// The admin API's JSON contract (docs/admin-api.md) as Swift value types: record-server
// encodes them, recordctl decodes them, and the documented examples decode into them
// (Tests/AdminModelsTests). A field renamed on one side is a compile error on the other.
//
// Why shared Swift models and not models generated from an OpenAPI document: both ends of the
// API are Swift targets of this one package, built and released together, so one module gives
// the same guarantee a generator would (one definition for both sides) with no build plugin,
// no runtime library and no generated names (`Components.Schemas.…`) in our code. And the
// contract has rules a generator would not keep: absent values are explicit `null` so every
// object of a kind has the same keys (generated `Codable` leaves nil keys out), `/health`
// shows its detail keys only to a caller with the token, dates are whole milliseconds in UTC,
// and label maps are user data no key strategy may touch. Issue 17's content API and web
// console add their routes' types here the same way; the console's pages are served by the
// server, which renders them from these types, and a browser script reads the same JSON
// that docs/admin-api.md documents and the examples test checks. Should a client in another
// language need it, an OpenAPI document can be written from these types, and checked against
// them with the same examples, without changing the server.
//
// Each type has only what is on the wire. The server's own records (catalog rows, live
// session figures) may grow fields for internal use; they map into these types in
// RecordServerCore (Admin/AdminJSON.swift), so nothing reaches the API unintended.
