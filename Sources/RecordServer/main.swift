import RecordServerCore

// Parse and run by hand: calling `main()` on an async command declared in another module
// resolves to the synchronous overload on Linux.
do {
    var command = try RecordServerCommand.parseAsRoot()
    if var asyncCommand = command as? any AsyncParsableCommandRunnable {
        try await asyncCommand.runAsync()
    } else {
        try command.run()
    }
} catch {
    RecordServerCommand.exit(withError: error)
}
