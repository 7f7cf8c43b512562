import RecordCtlCore

await RecordCtl.main()
