// Package proc tells about the processes of this host: whether one is
// alive (the instance claim, to take over a dead holder's records at once).
package proc
