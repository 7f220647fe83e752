// keeps a stage library valid while its folder is still empty
