import RecordServerCore

RecordServerMain.run(arguments: Array(CommandLine.arguments.dropFirst()))
