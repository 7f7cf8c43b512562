import RecordCtlCore

RecordCtl.main()
