// CairnEngine: see the module overview in this folder.
