#!/usr/bin/env perl
# Generates configure and the Makefile.in files (needs autoconf, automake,
# libtool and pkg-config's pkg.m4).
use strict;
use warnings;
use FindBin;

chdir $FindBin::Bin or die "autogen.pl: cannot cd to $FindBin::Bin: $!\n";
mkdir "config/aux" unless -d "config/aux";
for my $tool (qw(autoreconf libtoolize automake autoconf)) {
    system("command -v $tool >/dev/null 2>&1") == 0
        or die "autogen.pl: $tool not found (Debian/Ubuntu: apt-get install autoconf automake libtool pkg-config)\n";
}
my @cmd = ("autoreconf", "--install", "--warnings=all,no-portability");
print "autogen.pl: @cmd\n";
system(@cmd) == 0 or die "autogen.pl: autoreconf failed\n";
print "autogen.pl: done; now run ./configure\n";
